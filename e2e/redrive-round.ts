/**
 * The redrive round of the e2e's scripted day (issue 29: "a redrive never turns back time"):
 *
 * 1. A batch of records goes to the ingest queue; the commit function fails for the commit
 *    message it produces (the emulator's chosen failure: the invocation fails, the handler does not
 *    run) until SQS moves the message to the commit DLQ after maxReceiveCount receives.
 * 2. A newer batch of some of the same keys is sent and commits.
 * 3. `varve redrive shop.orders --queue commit` (the CLI's own code path, in this process) finds
 *    the commit queue and its DLQ by their tags, as on AWS (the emulator tags the queues as
 *    CloudFormation does), commits the dead-lettered batch without the rows whose key has a newer
 *    committed version, and prints what it committed and skipped. Only when the moto is shared
 *    with another deployment of shop.orders whose queues carry the same tags (a second run on the
 *    same moto) would the lookup be ambiguous: the round then passes the URLs and says so.
 *
 * The old versions of the keys the newer batch replaced are superseded: the sink never gets them
 * (not lost), and the table must end with the newer ones (the day's stale-wins count).
 */
import { GetQueueAttributesCommand, type Message, type SQSClient } from '@aws-sdk/client-sqs';
import { VARVE_QUEUE_TAGS } from '../lib/aws-contract.js';
import { runCli } from '../lib/cli/main.js';
import { queuesTaggedAs } from '../lib/stream/redrive.js';
import type { Emulator } from './emulator/emulator.js';
import type { MappingSpec } from './emulator/esm.js';

/** The emulator hook of step 1: fails every commit invocation holding the chosen message. */
export class DeadLetterFault {
  /** While armed, the next commit batch becomes the victim. */
  armed = false;
  readonly victims = new Set<string>();
  /** Commit invocations failed on purpose. */
  failures = 0;

  /** The mapping's `failInvocation` fault. */
  fail(mapping: MappingSpec, messages: Message[]): { name: string; message: string } | undefined {
    if (!/CommitSqsEventSource/.test(mapping.logicalId)) return undefined;
    if (this.armed && this.victims.size === 0) for (const m of messages) this.victims.add(m.MessageId!);
    if (!messages.some((m) => this.victims.has(m.MessageId!))) return undefined;
    this.failures++;
    return {
      name: 'E2eChosenCommitFailure',
      message: `e2e fault: the commit of message ${[...this.victims].join(', ')} fails until it is dead-lettered`,
    };
  }
}

/** What the round needs of the day. */
interface RoundContext {
  emu: Emulator;
  sqs: SQSClient;
  /** The ingest function's environment (warehouse, catalog table). */
  env: Record<string, string>;
  commitUrl: string;
  round: number;
  /** Keys this round already sent a version of (and saw committed). */
  ids: number[];
  next(id: number, status?: string): { id: number; v: number; status: string };
  sendRecords(bodies: string[]): Promise<void>;
  quiet(what: string, queues: RegExp, limitMs?: number): Promise<void>;
  deadLetter: DeadLetterFault;
  log(...a: unknown[]): void;
}

/** What the round showed. */
interface RoundResult {
  ok: boolean;
  what: string;
  /** `id/v` of the versions a newer committed version replaced before the redrive. */
  superseded: string[];
}

/** Runs the round (the queues are quiet when it starts). */
export async function redriveRound(ctx: RoundContext): Promise<RoundResult> {
  const { emu, sqs, round, deadLetter, log } = ctx;
  const { dlqUrl, maxReceiveCount } = await commitDeadLetterQueue(emu, sqs, ctx.commitUrl);
  const t0 = Date.now();
  const at = () => `${((Date.now() - t0) / 1000).toFixed(1)} s`;
  const replaced = ctx.ids.slice(0, 3);
  const onlyOld = [700 + round, 701 + round];
  // 1. The old batch, whose commit fails until it is dead-lettered.
  deadLetter.armed = true;
  const old = [...replaced, ...onlyOld].map((id) => ctx.next(id));
  await ctx.sendRecords([JSON.stringify(old)]);
  // The commit queue is empty again once SQS moved the message to the DLQ.
  await ctx.quiet(`round ${round} dead letter`, /Ingest|Commit/);
  deadLetter.armed = false;
  const dead = await depth(sqs, dlqUrl);
  log(`redrive round: ${dead} commit message(s) dead-lettered after ${deadLetter.failures} failed commits, ${at()}`);
  // 2. The newer batch of some of its keys commits.
  const newer = replaced.map((id) => ctx.next(id));
  await ctx.sendRecords([JSON.stringify(newer)]);
  await ctx.quiet(`round ${round} newer batch`, /Ingest|Commit/);
  log(`redrive round: newer batch of keys ${replaced.join(' ')} committed, ${at()}`);
  // 3. The operator's redrive: the queues found by their tags, unless other queues carry them too.
  const others = (await queuesTaggedAsCommit(sqs)).filter((u) => u !== ctx.commitUrl && u !== dlqUrl);
  const byTags = others.length === 0;
  if (!byTags)
    log(
      `redrive round: ${others.length} other queue(s) on this moto are tagged as shop.orders' commit queues (another deployment): the queues are passed by URL, the tag lookup is not exercised`,
    );
  const printed = await redriveCli(ctx.env, byTags ? undefined : { commitUrl: ctx.commitUrl, dlqUrl });
  for (const line of printed.text.split('\n').filter(Boolean)) log(`varve redrive: ${line}`);
  // Found by tags: the output names the deployment's DLQ and commit queue.
  const found = printed.text.includes(`from ${dlqUrl}`) && printed.text.includes(`of ${ctx.commitUrl}`);
  const summary = /committed (\d+) row\(s\), skipped (\d+) row\(s\)/.exec(printed.text);
  const committed = Number(summary?.[1] ?? -1);
  const skipped = Number(summary?.[2] ?? -1);
  const left = await depth(sqs, dlqUrl);
  log(`redrive round: redrive done, ${at()}`);
  const ok =
    printed.code === 0 &&
    deadLetter.failures >= maxReceiveCount &&
    dead === 1 &&
    committed === onlyOld.length &&
    skipped === replaced.length &&
    left === 0 &&
    found;
  return {
    ok,
    what:
      `the commit failed ${deadLetter.failures} times (maxReceiveCount ${maxReceiveCount}), ${dead} message(s) dead-lettered; ` +
      `after a newer batch of keys ${replaced.join(' ')} committed, varve redrive (exit ${printed.code}) committed ${committed} row(s) ` +
      `(keys ${onlyOld.join(' ')} expected) and skipped ${skipped} (keys ${replaced.join(' ')} expected); ${left} left in the DLQ; ` +
      `queues ${byTags ? 'found by their tags' : 'given by URL'}${found ? '' : ", NOT the deployment's (its output does not name them)"}`,
    superseded: old.filter((r) => replaced.includes(r.id)).map((r) => `${r.id}/${r.v}`),
  };
}

/** The commit queue's DLQ (from its redrive policy) and its maxReceiveCount. */
async function commitDeadLetterQueue(
  emu: Emulator,
  sqs: SQSClient,
  commitUrl: string,
): Promise<{ dlqUrl: string; maxReceiveCount: number }> {
  const a = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: commitUrl, AttributeNames: ['RedrivePolicy'] }));
  const policy = JSON.parse(a.Attributes?.RedrivePolicy ?? '{}') as {
    deadLetterTargetArn?: string;
    maxReceiveCount?: number | string;
  };
  const dlq = [...emu.deployment.physical.values()].find((p) => p.attrs.Arn === policy.deadLetterTargetArn);
  if (!dlq || policy.maxReceiveCount === undefined)
    throw new Error(
      `the commit queue ${commitUrl} has no dead-letter queue of the deployment: ${a.Attributes?.RedrivePolicy}`,
    );
  return { dlqUrl: dlq.ref, maxReceiveCount: Number(policy.maxReceiveCount) };
}

/** The queues tagged as a commit queue or commit DLQ of shop.orders (what `varve redrive` looks for). */
function queuesTaggedAsCommit(sqs: SQSClient): Promise<string[]> {
  return queuesTaggedAs(
    sqs,
    (tags) => tags[VARVE_QUEUE_TAGS.table] === 'shop.orders' && tags[VARVE_QUEUE_TAGS.queue] === 'commit',
  );
}

/**
 * Runs `varve redrive shop.orders --queue commit` as an operator would, with the deployment's
 * catalog; the queues by their tags, or by `urls`.
 */
async function redriveCli(
  env: Record<string, string>,
  urls?: { commitUrl: string; dlqUrl: string },
): Promise<{ code: number; text: string }> {
  let text = '';
  const catalogTable = process.env.VARVE_CATALOG_TABLE;
  process.env.VARVE_CATALOG_TABLE = env.VARVE_CATALOG_TABLE;
  try {
    const argv = ['--warehouse', env.VARVE_WAREHOUSE, 'redrive', 'shop.orders', '--queue', 'commit'];
    if (urls) argv.push('--dlq-url', urls.dlqUrl, '--to-url', urls.commitUrl);
    const code = await runCli(argv, { out: (t) => (text += t), err: (t) => (text += t) });
    return { code, text };
  } finally {
    if (catalogTable === undefined) delete process.env.VARVE_CATALOG_TABLE;
    else process.env.VARVE_CATALOG_TABLE = catalogTable;
  }
}

/** Visible plus in-flight messages of a queue. */
async function depth(sqs: SQSClient, url: string): Promise<number> {
  const a = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: url,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  return (
    Number(a.Attributes?.ApproximateNumberOfMessages) + Number(a.Attributes?.ApproximateNumberOfMessagesNotVisible)
  );
}
