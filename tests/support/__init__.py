"""What tests share across folders: stand-ins at a port's boundary that more than one folder needs."""
