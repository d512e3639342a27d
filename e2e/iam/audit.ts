/**
 * The IAM audit: every recorded SDK call of a function, evaluated with a real IAM policy engine
 * (@cloud-copilot/iam-simulate) against the synthesised policies of that function's role and the
 * resource policy of what it touched (the bucket policy, the queue policies), as AWS would. A call
 * AWS would refuse, and a 404 that AWS would turn into a 403, is a denial; the build fails on any.
 */
import { runSimulation, type Simulation } from '@cloud-copilot/iam-simulate';
import {
  ACCOUNT,
  functionsOf,
  resourcePolicies,
  rolePolicies,
  type CfnTemplate,
  type PolicyDocument,
  type Resolver,
} from '../aws/template.js';
import { iamRequestsOf, type IamRequest, type RecordedCall } from './requests.js';

/** One authorisation AWS would refuse. */
export interface Denial {
  fn: string;
  call: string;
  action: string;
  resource: string;
  context: Record<string, string>;
  result: string;
  why?: string;
}

/** What an audit found. */
export interface AuditReport {
  /** SDK calls recorded. */
  calls: number;
  /** Distinct authorisations evaluated. */
  checks: number;
  denials: Denial[];
  /** Calls per function and `service:command`, for the report. */
  byFunction: Record<string, Record<string, number>>;
}

interface FunctionPolicies {
  role: string;
  identity: { name: string; policy: PolicyDocument }[];
}

/** Audits calls against one deployed (resolved) template. */
export class IamAudit {
  private readonly functions = new Map<string, FunctionPolicies>();
  /** Resource ARN → merged resource policy. */
  private readonly resourcePolicy = new Map<string, PolicyDocument>();
  private readonly calls: RecordedCall[] = [];

  constructor(template: CfnTemplate, resolver: Resolver) {
    for (const f of functionsOf(template)) {
      this.functions.set(f.logicalId, {
        role: `arn:aws:iam::${ACCOUNT}:role/${f.roleId}`,
        identity: rolePolicies(template, f.roleId).map((p) => ({
          name: p.name,
          policy: resolver.resolve(p.document) as PolicyDocument,
        })),
      });
    }
    for (const [id, docs] of resourcePolicies(template)) {
      const arn = resolver.resolve({ 'Fn::GetAtt': [id, 'Arn'] });
      const statements = docs.flatMap((d) => (resolver.resolve(d) as PolicyDocument).Statement);
      this.resourcePolicy.set(arn as string, { Version: '2012-10-17', Statement: statements });
    }
  }

  /** Adds one recorded call. */
  record(call: RecordedCall): void {
    this.calls.push(call);
  }

  /** The calls recorded so far. */
  recorded(): readonly RecordedCall[] {
    return this.calls;
  }

  /** Evaluates every recorded call; identical authorisations are evaluated once. */
  async evaluate(): Promise<AuditReport> {
    const denials: Denial[] = [];
    const seen = new Map<string, string>();
    const byFunction: Record<string, Record<string, number>> = {};
    for (const call of this.calls) {
      const what = `${call.service}:${call.command}`;
      (byFunction[call.fn] ??= {})[what] = (byFunction[call.fn][what] ?? 0) + 1;
      const fn = this.functions.get(call.fn);
      let requests: IamRequest[];
      try {
        if (!fn) throw new Error(`the call was made by '${call.fn}', which is no function of the template`);
        requests = iamRequestsOf(call);
      } catch (e) {
        denials.push({
          fn: call.fn,
          call: what,
          action: '?',
          resource: '?',
          context: {},
          result: (e as Error).message,
        });
        continue;
      }
      for (const r of requests) {
        const key = JSON.stringify([call.fn, r.action, r.resource, r.context]);
        let result = seen.get(key);
        if (result === undefined) {
          result = await this.decide(fn!, r);
          seen.set(key, result);
        }
        if (result !== 'Allowed') denials.push({ fn: call.fn, call: what, ...r, result });
      }
    }
    return { calls: this.calls.length, checks: seen.size, denials: dedupe(denials), byFunction };
  }

  /** The decision for one authorisation of the function `fn`. */
  check(fn: string, r: IamRequest): Promise<string> {
    const policies = this.functions.get(fn);
    if (!policies) throw new Error(`${fn} is no function of the template`);
    return this.decide(policies, r);
  }

  /** `Allowed`, `ImplicitlyDenied`, `ExplicitlyDenied`, or the engine's validation error. */
  private async decide(fn: FunctionPolicies, r: IamRequest): Promise<string> {
    const simulation: Simulation = {
      identityPolicies: fn.identity,
      serviceControlPolicies: [],
      resourceControlPolicies: [],
      resourcePolicy: this.resourcePolicyFor(r.resource),
      request: {
        principal: fn.role,
        action: r.action,
        resource: { resource: r.resource, accountId: ACCOUNT },
        // Lambda calls AWS over TLS: the buckets' and queues' enforceSSL statements see true.
        contextVariables: {
          'aws:SecureTransport': 'true',
          'aws:PrincipalArn': fn.role,
          'aws:PrincipalAccount': ACCOUNT,
          ...r.context,
        },
      },
    } as unknown as Simulation;
    const out = await runSimulation(simulation, {});
    if (out.resultType === 'error') return `engine refused the request: ${JSON.stringify(out.errors)}`;
    return out.overallResult;
  }

  private resourcePolicyFor(resource: string): PolicyDocument | undefined {
    const direct = this.resourcePolicy.get(resource);
    if (direct) return direct;
    // An object ARN takes its bucket's policy.
    const m = /^arn:aws:s3:::([^/]+)\//.exec(resource);
    return m ? this.resourcePolicy.get(`arn:aws:s3:::${m[1]}`) : undefined;
  }
}

function dedupe(denials: Denial[]): Denial[] {
  const seen = new Set<string>();
  return denials.filter((d) => {
    const k = JSON.stringify(d);
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

/** One line per denial, for failure messages. */
export function formatDenials(denials: readonly Denial[]): string {
  return denials
    .map(
      (d) =>
        `${d.fn}: ${d.call} → ${d.action} on ${d.resource} ${JSON.stringify(d.context)}: ${d.result}${d.why ? ` (${d.why})` : ''}`,
    )
    .join('\n');
}
