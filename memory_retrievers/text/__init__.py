"""What a text says, as pure functions: keywords, dates, speakers, chat lines, duplicates, context windows.

Private modules, shared by the store (dedup and context on write) and recall (queries, the block).
"""
