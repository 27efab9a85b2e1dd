"""Root causes picked out of Spark's texts (kafka_audit/engines/spark_errors.py); the texts are shaped as
Spark 4 writes them (see tests/test_spark_failures.py for the real ones, end to end)."""

from __future__ import annotations

from kafka_audit.engines.spark_errors import describe, executor_of, root_cause

JOB_FAILURE = """An error occurred while calling z:org.apache.spark.api.python.PythonRDD.collectAndServe.
: org.apache.spark.SparkException: Job aborted due to stage failure: Task 1 in stage 3.0 failed 4 times, most recent failure: Lost task 1.3 in stage 3.0 (TID 9) (127.0.0.1 executor 1): org.apache.spark.api.python.PythonException: Traceback (most recent call last):
  File "/opt/venv/lib/python3.11/site-packages/pyspark/worker.py", line 1900, in main
    func, profiler, deserializer, serializer = read_command(pickleSer, infile)
  File "/opt/venv/lib/python3.11/site-packages/pyspark/serializers.py", line 471, in loads
    return cloudpickle.loads(obj, encoding=encoding)
ModuleNotFoundError: No module named 'kafka_audit'

\tat org.apache.spark.api.python.BasePythonRunner$ReaderIterator.handlePythonException(PythonRunner.scala:600)
"""

START_LOG = """WARNING: Using incubator modules: jdk.incubator.vector
Using Spark's default log4j profile: org/apache/spark/log4j2-defaults.properties
26/11/25 02:23:03 WARN Utils: Your hostname, vm, resolves to a loopback address: 127.0.0.1; using 192.0.2.2 instead (on interface eth0)
/opt/venv/lib/python3.11/site-packages/pyspark/testing/utils.py:127: FutureWarning: PySpark does not yet fully support pandas >= 3.0.0.
  require_minimum_pandas_version()
26/11/25 02:23:06 WARN StandaloneAppClient$ClientEndpoint: Failed to connect to master 10.0.0.5:7077
org.apache.spark.SparkException: Exception thrown in awaitResult:
\tat org.apache.spark.util.SparkThreadUtils$.awaitResult(SparkThreadUtils.scala:53)
Caused by: java.io.IOException: Failed to connect to /10.0.0.5:7077
\tat org.apache.spark.network.client.TransportClientFactory.createClient(TransportClientFactory.java:294)
Caused by: java.net.ConnectException: Connection refused
\t... 1 more
"""


def test_the_python_worker_s_exception_and_its_executor():
    assert root_cause(JOB_FAILURE) == "ModuleNotFoundError: No module named 'kafka_audit'"
    assert executor_of(JOB_FAILURE) == "127.0.0.1 executor 1"
    assert describe(RuntimeError(JOB_FAILURE), "/tmp/s/spark.log") == (
        "ModuleNotFoundError: No module named 'kafka_audit' (on 127.0.0.1 executor 1); Spark's log: /tmp/s/spark.log"
    )


def test_the_log_s_first_cause_with_its_deepest_caused_by():
    assert root_cause(START_LOG) == "Failed to connect to master 10.0.0.5:7077 (Connection refused)"


def test_a_log_of_noise_only_names_no_cause():
    assert root_cause(START_LOG.split("26/11/25 02:23:06", maxsplit=1)[0]) is None


def test_a_jvm_that_cannot_start():
    text = "Invalid maximum heap size: -Xmxlots\nError: Could not create the Java Virtual Machine.\n"
    assert root_cause(text) == "Invalid maximum heap size: -Xmxlots"


def test_the_jvm_s_own_warnings_are_not_the_cause():
    """A stale class-data-sharing archive makes HotSpot warn first (the JVM goes on); the cause
    is Spark's exception after it (seen on a venv reinstalled at the same path)."""
    text = (
        "[0.140s][warning][cds,dynamic] Unable to use shared archive. The top archive failed to load: "
        "/root/.cache/kafka-audit/spark-driver-4.3.0-java-17-7a94addf5b3b.jsa\n"
        "org.apache.spark.SparkException: Master must either be yarn or start with spark, k8s, or local\n"
        "\tat org.apache.spark.SparkContext$.org$apache$spark$SparkContext$$createTaskScheduler(SparkContext.scala:3248)\n"
    )
    assert root_cause(text) == "SparkException: Master must either be yarn or start with spark, k8s, or local"
    assert root_cause("[0.2s][error][cds] An error has occurred while processing the shared archive file.\n") == (
        "[0.2s][error][cds] An error has occurred while processing the shared archive file."
    )
