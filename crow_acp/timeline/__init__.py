"""File checkpoints: what the workspace was before each user prompt, kept so /rewind can put it back.

    tree.py        Entry and Manifest; scan(): every file, link and directory under the session's roots,
                   links recorded as links (never followed), a stat cache; after the first, only what changed
    ignores.py     which names a scan records: each directory's .gitignore (git's rules), cached decisions
    watch.py       the change journal: inotify watches on the walked directories, drained at each scan, failing
                   closed to a full walk whenever it cannot be trusted
    objects.py     Objects: content-addressed blobs under $CROW_HOME/checkpoints/<session>/, written
                   atomically, with the per-file and per-session limits
    timeline.py    Timeline: one session's checkpoints (before and after each prompt), its index on disk;
                   Checkpoints: the timelines of an agent's sessions, taken before and after each prompt
    restore.py     what changed between two manifests, and putting files back through directory fds
                   (O_NOFOLLOW at every step: nothing is written outside the roots)
    journal.py     the intent of a rewind, written before it starts, so a kill leaves a finishable one

Crow never runs git here and never writes into `.git`: files are hashed by crow itself.
May import: crow_acp.config, errors, util (a file holding one of crow's keys is not kept), and pathspec
(the .gitignore rules), inotify_simple (the change journal).
"""
