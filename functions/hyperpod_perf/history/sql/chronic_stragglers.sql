-- Chronic stragglers: nodes flagged slow against the fleet (fleet.outlier) or behind the slow pairs
-- (nccl.node_suspect) in at least k of the cluster's last n runs.
-- Parameters: cluster, since_date, n (last runs), cluster, since_date, k (minimum flagged runs).
WITH runs AS (
  SELECT run_id, row_number() OVER (ORDER BY max(run_time) DESC) AS recency
  FROM history_nodes
  WHERE cluster = ? AND run_date >= ?
  GROUP BY run_id
),
recent AS (
  SELECT run_id FROM runs WHERE recency <= ?
),
flagged AS (
  SELECT f.instance_id, f.run_id, max(f.hostname) AS hostname, max(f.value) AS value
  FROM history_findings f
  JOIN recent r ON f.run_id = r.run_id
  WHERE f.cluster = ?
    AND f.run_date >= ?
    AND f.severity = 'CONCERN'
    AND f.check_id IN ('fleet.outlier', 'nccl.node_suspect')
  GROUP BY f.instance_id, f.run_id
)
SELECT
  instance_id,
  max(hostname) AS hostname,
  count(*) AS flagged_runs,
  (SELECT count(*) FROM recent) AS of_runs
FROM flagged
GROUP BY instance_id
HAVING count(*) >= ?
ORDER BY flagged_runs DESC, instance_id
