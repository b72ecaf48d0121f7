from docuthinker_cli.app import main

main()
