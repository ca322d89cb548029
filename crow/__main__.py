from crow.cli import main

main()
