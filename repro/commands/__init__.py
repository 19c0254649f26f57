"""CLI commands, one module per stage; each module's functions only parse flags and print."""
