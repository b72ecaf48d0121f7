from services.orchestrator.service import binding
from services.runtime import serve

serve(binding)
