-- The fleet's concerns by check over time: per day and check, the concerns raised, the nodes they
-- named and the runs that raised them.
-- Parameters: cluster, since_date.
SELECT
  run_date,
  check_id,
  count(*) AS concerns,
  count(DISTINCT instance_id) AS nodes,
  count(DISTINCT run_id) AS runs
FROM history_findings
WHERE cluster = ?
  AND run_date >= ?
  AND severity = 'CONCERN'
GROUP BY run_date, check_id
ORDER BY run_date, concerns DESC, check_id
