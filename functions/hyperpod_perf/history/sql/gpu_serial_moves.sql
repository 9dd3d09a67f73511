-- GPU boards (by serial) seen on more than one instance: one row per serial and instance, in the
-- order the board was seen there. Serials that are all zeros (anonymised or unprogrammed) are skipped.
-- Parameters: cluster, since_date.
WITH seen AS (
  SELECT
    serial,
    instance_id,
    max(hostname) AS hostname,
    min(gpu_index) AS gpu_index,
    min(run_time) AS first_seen,
    max(run_time) AS last_seen
  FROM history_gpus
  WHERE cluster = ?
    AND run_date >= ?
    AND serial IS NOT NULL
    AND replace(serial, '0', '') <> ''
  GROUP BY serial, instance_id
),
moved AS (
  SELECT serial FROM seen GROUP BY serial HAVING count(*) > 1
)
SELECT s.serial, s.instance_id, s.hostname, s.gpu_index, s.first_seen, s.last_seen
FROM seen s
JOIN moved m ON s.serial = m.serial
ORDER BY s.serial, s.first_seen, s.instance_id
