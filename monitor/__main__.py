from monitor.cli.main import main

main()
