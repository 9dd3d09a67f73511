-- GPU boards (by serial) seen on more than one instance: one row per serial and instance, in the
-- order the board was seen there. A GPU without a usable serial (none, N/A, all zeros: anonymised or
-- unprogrammed) has a null serial in the rows (history/rows.py) and is skipped.
-- The boards that moved are found first on one grouping key, and only their rows are grouped again:
-- nearly every board never moves, and grouping every (serial, instance) pair with its aggregates, or
-- testing each row's serial for zeros here, cost 2-5 times as much over 2.9 M rows (bench).
-- Parameters: cluster, since_date, cluster, since_date.
WITH moved AS (
  SELECT serial
  FROM history_gpus
  WHERE cluster = ?
    AND run_date >= ?
    AND serial IS NOT NULL
  GROUP BY serial
  HAVING count(DISTINCT instance_id) > 1
)
SELECT
  g.serial,
  g.instance_id,
  max(g.hostname) AS hostname,
  min(g.gpu_index) AS gpu_index,
  min(g.run_time) AS first_seen,
  max(g.run_time) AS last_seen
FROM history_gpus g
WHERE g.cluster = ?
  AND g.run_date >= ?
  AND g.serial IN (SELECT serial FROM moved)
GROUP BY g.serial, g.instance_id
ORDER BY g.serial, first_seen, g.instance_id
