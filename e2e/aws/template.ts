/**
 * Reading a synthesised CloudFormation template the way CloudFormation would deploy it: the
 * functions with their environment, memory, timeout, role and asset, the IAM policies of each
 * role, the bucket and queue policies, the queues, the event source mappings and the EventBridge
 * rules; and the intrinsic functions (Ref, Fn::GetAtt, Fn::Join, Fn::Select, Fn::Split, Fn::Sub,
 * pseudo parameters) resolved against the physical resources of one emulated deployment.
 */
import { readFileSync } from 'node:fs';

/** A CloudFormation template as `cdk synth` writes it. */
export interface CfnTemplate {
  Resources: Record<string, CfnResource>;
  Outputs?: Record<string, { Value: unknown }>;
}

/** One resource of a template. */
export interface CfnResource {
  Type: string;
  Properties?: Record<string, any>;
  Metadata?: Record<string, any>;
  DependsOn?: string | string[];
}

/** An IAM policy document. */
export interface PolicyDocument {
  Version?: string;
  Statement: PolicyStatementJson[];
}

/** One statement of a policy document. */
export interface PolicyStatementJson {
  Sid?: string;
  Effect: 'Allow' | 'Deny';
  Action?: string | string[];
  NotAction?: string | string[];
  Resource?: unknown;
  Principal?: unknown;
  Condition?: Record<string, Record<string, unknown>>;
}

/** The account and region every emulated deployment lives in (moto's defaults). */
export const ACCOUNT = '123456789012';
export const REGION = 'us-east-1';

/** Reads `cdk.out/<stack>.template.json`. */
export function readTemplate(file: string): CfnTemplate {
  return JSON.parse(readFileSync(file, 'utf8')) as CfnTemplate;
}

/** Physical values of one resource, as `Ref` and `Fn::GetAtt` see them. */
export interface Physical {
  ref: string;
  attrs: Record<string, string>;
}

/** Resolves intrinsic functions against a map of logical id → physical resource. */
export class Resolver {
  constructor(
    readonly template: CfnTemplate,
    readonly physical: ReadonlyMap<string, Physical>,
  ) {}

  /** `value` with every intrinsic replaced by its deployed value (strings, arrays and objects). */
  resolve(value: unknown): any {
    if (Array.isArray(value)) return value.map((v) => this.resolve(v));
    if (value === null || typeof value !== 'object') return value;
    const obj = value as Record<string, unknown>;
    const keys = Object.keys(obj);
    if (keys.length === 1) {
      const [k] = keys;
      const arg = obj[k];
      switch (k) {
        case 'Ref':
          return this.ref(arg as string);
        case 'Fn::GetAtt': {
          const [id, attr] = Array.isArray(arg) ? (arg as string[]) : (arg as string).split('.');
          return this.getAtt(id, attr);
        }
        case 'Fn::Join': {
          const [sep, parts] = arg as [string, unknown[]];
          return (this.resolve(parts) as unknown[]).map(String).join(sep);
        }
        case 'Fn::Select': {
          const [i, list] = arg as [unknown, unknown];
          return (this.resolve(list) as unknown[])[Number(this.resolve(i))];
        }
        case 'Fn::Split': {
          const [sep, s] = arg as [string, unknown];
          return String(this.resolve(s)).split(sep);
        }
        case 'Fn::Sub': {
          const [text, vars] = Array.isArray(arg) ? (arg as [string, Record<string, unknown>]) : [arg as string, {}];
          return text.replace(/\$\{([^}]+)\}/g, (_, name: string) => {
            if (name in vars) return String(this.resolve(vars[name]));
            if (name.includes('.')) {
              const [id, attr] = name.split('.');
              return this.getAtt(id, attr);
            }
            return this.ref(name);
          });
        }
      }
    }
    return Object.fromEntries(keys.map((k) => [k, this.resolve(obj[k])]));
  }

  private ref(id: string): string {
    switch (id) {
      case 'AWS::Partition':
        return 'aws';
      case 'AWS::Region':
        return REGION;
      case 'AWS::AccountId':
        return ACCOUNT;
      case 'AWS::URLSuffix':
        return 'amazonaws.com';
      case 'AWS::StackName':
        return 'VarveExample';
    }
    const p = this.physical.get(id);
    if (!p) throw new Error(`the template refers to ${id}, which this emulated deployment does not create`);
    return p.ref;
  }

  private getAtt(id: string, attr: string): string {
    const p = this.physical.get(id);
    const v = p?.attrs[attr];
    if (v === undefined)
      throw new Error(`the template reads ${id}.${attr}, which this emulated deployment does not provide`);
    return v;
  }
}

/** Resources of one type, keyed by logical id. */
export function resourcesOfType(t: CfnTemplate, type: string): [string, CfnResource][] {
  return Object.entries(t.Resources).filter(([, r]) => r.Type === type);
}

/** The logical id an intrinsic `{Ref: id}` or `{Fn::GetAtt: [id, …]}` points at. */
export function logicalIdOf(value: unknown): string | undefined {
  if (value && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    if (typeof o.Ref === 'string') return o.Ref;
    const ga = o['Fn::GetAtt'];
    if (Array.isArray(ga)) return ga[0] as string;
    if (typeof ga === 'string') return ga.split('.')[0];
  }
  return undefined;
}

/** A Lambda function of the template. */
export interface TemplateFunction {
  logicalId: string;
  roleId: string;
  handler: string;
  memoryMb: number;
  timeoutSeconds: number;
  environment: Record<string, unknown>;
  /** `aws:asset:path` of the bundle folder (relative to cdk.out), when synthesised with assets. */
  assetPath?: string;
  reservedConcurrency?: number;
}

/** Every AWS::Lambda::Function of the template. */
export function functionsOf(t: CfnTemplate): TemplateFunction[] {
  return resourcesOfType(t, 'AWS::Lambda::Function').map(([logicalId, r]) => {
    const p = r.Properties ?? {};
    const roleId = logicalIdOf(p.Role);
    if (!roleId) throw new Error(`function ${logicalId} has no role of this template`);
    return {
      logicalId,
      roleId,
      handler: p.Handler as string,
      memoryMb: (p.MemorySize as number | undefined) ?? 128,
      timeoutSeconds: (p.Timeout as number | undefined) ?? 3,
      environment: (p.Environment?.Variables as Record<string, unknown> | undefined) ?? {},
      assetPath: r.Metadata?.['aws:asset:path'] as string | undefined,
      reservedConcurrency: p.ReservedConcurrentExecutions as number | undefined,
    };
  });
}

/** The inline policies (AWS::IAM::Policy) attached to a role, unresolved. */
export function rolePolicies(t: CfnTemplate, roleId: string): { name: string; document: PolicyDocument }[] {
  const out: { name: string; document: PolicyDocument }[] = [];
  for (const [id, r] of resourcesOfType(t, 'AWS::IAM::Policy')) {
    const roles = ((r.Properties?.Roles as unknown[]) ?? []).map(logicalIdOf);
    if (roles.includes(roleId)) out.push({ name: id, document: r.Properties!.PolicyDocument as PolicyDocument });
  }
  const role = t.Resources[roleId];
  for (const p of (role?.Properties?.Policies as
    | { PolicyName: string; PolicyDocument: PolicyDocument }[]
    | undefined) ?? []) {
    out.push({ name: p.PolicyName, document: p.PolicyDocument });
  }
  return out;
}

/** Resource policies by the logical id of the resource they guard (bucket and queue policies). */
export function resourcePolicies(t: CfnTemplate): Map<string, PolicyDocument[]> {
  const out = new Map<string, PolicyDocument[]>();
  const add = (id: string | undefined, doc: PolicyDocument) => {
    if (!id) return;
    out.set(id, [...(out.get(id) ?? []), doc]);
  };
  for (const [, r] of resourcesOfType(t, 'AWS::S3::BucketPolicy'))
    add(logicalIdOf(r.Properties!.Bucket), r.Properties!.PolicyDocument);
  for (const [, r] of resourcesOfType(t, 'AWS::SQS::QueuePolicy')) {
    for (const q of r.Properties!.Queues as unknown[]) add(logicalIdOf(q), r.Properties!.PolicyDocument);
  }
  return out;
}
