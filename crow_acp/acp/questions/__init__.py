"""Questions for the user through the editor: an MCP server's elicitation, and the model's ask_user.

    elicitation.py     EditorQuestions: a session's Elicitor, sending elicitation/create (form or URL)
    form_check.py      a requested form checked against what ACP allows, before the editor sees it
    question_shown.py  what the user is shown: bounded, no control characters, the real host of a URL
    ask_user.py        the ask_user tool: the model asks, the editor's form answers

Permissions are asked by policy/ (the decision) through the editor's request_permission.
May import: updates/, rpc/ and the rooms below acp.
"""
