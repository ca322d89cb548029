"""Small helpers every layer uses, with no opinion about agents.

    text.py     valid Unicode at every boundary: lone surrogates repaired, streamed text kept whole
    secrets.py  crow's secrets stay in crow: child environments and redaction of recorded text
    environment.py  the allow list of crow's environment that child processes inherit
    imports.py  imports off the event loop, one at a time

May import: crow_acp.errors, events and history (types only), and the standard library.
"""
