"""The audit: the plan of a scan (options, segment and partition tasks, made once), the steps an
engine runs (they read files and call the rules), the finish that sums them up, and the result
types that engines hand back.

May use: ``rules``, ``log``, ``record``, ``io``. No Spark: engines distribute these tasks.
"""
