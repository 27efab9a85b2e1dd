"""The audit: options, planning a scan into segment and partition tasks, running those tasks
(they read files and call the rules), and the result types that engines carry.

May use: ``rules``, ``log``, ``record``, ``io``. No Spark: engines distribute these tasks.
"""
