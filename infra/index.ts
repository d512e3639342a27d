/**
 * `varve/cdk`: the CDK constructs (aws-cdk-lib and constructs are peer dependencies). A Warehouse
 * (bucket, catalog, event bus), a VarveTable per table (ingestion, commit, compaction, expiry) and
 * a StreamConsumer per consumer (discovery, split queue, readers with your sink).
 */
export { Warehouse, type WarehouseProps, type WarehouseEventBus } from './warehouse.js';
export {
  VarveTable,
  type VarveTableProps,
  type IngestOptions,
  type CompactionOptions,
  type CommitMode,
} from './table.js';
export { StreamConsumer, type StreamConsumerProps, type StreamSink } from './stream-consumer.js';
export { VarveAlarms, type VarveAlarmsProps, type VarveAlarmThresholds } from './alarms.js';
export {
  VarveDeployRules,
  DEPLOY_RULES,
  checkDeployRules,
  type DeployRule,
  type DeployRuleViolation,
} from './deploy-rules.js';
