-- Nodes with an Xid in the look-back, one row per node and Xid code.
-- Parameters: cluster, since_date (YYYY-MM-DD), since_time (YYYY-MM-DDTHH:MM:SSZ), code ('' = any), code again.
SELECT
  instance_id,
  max(hostname) AS hostname,
  code,
  count(DISTINCT run_id) AS runs,
  min(run_time) AS first_seen,
  max(run_time) AS last_seen
FROM history_findings
WHERE cluster = ?
  AND run_date >= ?
  AND run_time >= ?
  AND check_id = 'gpu.xid'
  AND severity = 'CONCERN'
  AND (? = '' OR code = ?)
GROUP BY instance_id, code
ORDER BY runs DESC, last_seen DESC, instance_id, code
