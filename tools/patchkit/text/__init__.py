"""The ground floor of what people and machines read: aligned tables and JSON (table.py), a value
as one shell word and a ref as people name it (words.py), and hints said in the user's
vocabulary, make variables or flags (voice.py).

Every command's rendering builds on these; they import nothing of the package but errors.py,
so no command reaches up to the CLI for them (tests/test_house.py keeps it so).
"""
