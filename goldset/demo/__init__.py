"""The demo golden set wiki-demo, on the top floor since it writes into every app: its word
lists and templates, the generator that turns them and a seed into records, and its loader."""
