-- Nodes whose pair bandwidth trends down: per run, the mean busbw of the node's measured pairs;
-- over the look-back, the least-squares slope against the run sequence and the change from the
-- node's first to its last measured run.
-- Division is cast to DOUBLE: Trino divides integers as integers, DuckDB does not.
-- Parameters: cluster, since_date, minimum runs measured, minimum relative drop (0.05 = 5 %).
WITH per_run AS (
  SELECT
    instance_id,
    hostname,
    run_time,
    pair_mean_gbps AS gbps,
    dense_rank() OVER (ORDER BY run_time) AS seq
  FROM history_nodes
  WHERE cluster = ?
    AND run_date >= ?
    AND pair_mean_gbps IS NOT NULL
),
trend AS (
  SELECT
    instance_id,
    max(hostname) AS hostname,
    count(*) AS runs,
    regr_slope(gbps, seq) AS slope_gbps_per_run,
    min_by(gbps, seq) AS first_gbps,
    max_by(gbps, seq) AS last_gbps
  FROM per_run
  GROUP BY instance_id
)
SELECT
  instance_id,
  hostname,
  runs,
  round(slope_gbps_per_run, 3) AS slope_gbps_per_run,
  first_gbps,
  last_gbps,
  round(CAST(last_gbps - first_gbps AS DOUBLE) / first_gbps, 4) AS change
FROM trend
WHERE runs >= ?
  AND slope_gbps_per_run < 0
  AND first_gbps > 0
  AND CAST(first_gbps - last_gbps AS DOUBLE) / first_gbps >= ?
ORDER BY change, instance_id
