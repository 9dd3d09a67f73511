-- GPU boards (by serial) seen on more than one instance: one row per serial and instance, in the
-- order the board was seen there. Serials that are all zeros (anonymised or unprogrammed) are skipped.
-- The boards that moved are found first with one grouping key (a serial whose smallest and largest
-- instance differ), and only their rows are grouped again: nearly every board never moves, and
-- grouping every (serial, instance) pair with five aggregates cost 2-3 times as much (bench).
-- Parameters: cluster, since_date, cluster, since_date.
WITH moved AS (
  SELECT serial
  FROM history_gpus
  WHERE cluster = ?
    AND run_date >= ?
    AND serial IS NOT NULL
  GROUP BY serial
  HAVING min(instance_id) <> max(instance_id)
    AND replace(serial, '0', '') <> ''
),
seen AS (
  SELECT
    g.serial,
    g.instance_id,
    max(g.hostname) AS hostname,
    min(g.gpu_index) AS gpu_index,
    min(g.run_time) AS first_seen,
    max(g.run_time) AS last_seen
  FROM history_gpus g
  JOIN moved m ON g.serial = m.serial
  WHERE g.cluster = ?
    AND g.run_date >= ?
  GROUP BY g.serial, g.instance_id
)
SELECT serial, instance_id, hostname, gpu_index, first_seen, last_seen
FROM seen
ORDER BY serial, first_seen, instance_id
