"""`crow setup`: a provider, a key and a model, checked, then stored in $CROW_HOME/credentials.toml.

    providers.py  the providers crow knows (their URL, wire and whether a key is needed)
    probe.py      the provider's model list and the one tiny request that checks the key
    flow.py       the interactive terminal flow (hidden key, pick a model, ask again on failure)

crow/setup_cmd.py is the command: its flags, and the same steps without questions for scripts.
"""
