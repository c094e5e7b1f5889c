from kvcalc.cli.app import run

run()
