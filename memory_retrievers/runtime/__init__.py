"""The library's own threads and event loops: sync over async, plug-in calls, fork handling, write order.

Private modules.
"""
