from adcli.cli import main

main()
