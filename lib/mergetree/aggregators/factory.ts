/** Picks and checks the aggregator of a column from its function name and type. */
import { OptionError } from '../../errors.js';
import { AGGREGATE_FUNCTIONS, AGGREGATE_FUNCTION_TYPES } from '../../schema/options.js';
import type { DataField } from '../../schema/types.js';
import { IgnoreRetract, type AggregatorContext, type FieldAggregator } from './aggregator.js';
import { BoolAggregator } from './bool.js';
import { CountAggregator } from './count.js';
import { ExtremumAggregator } from './extremum.js';
import { FirstNonNullValueAggregator, FirstValueAggregator } from './first-value.js';
import { KeepLastAggregator, LastNonNullValueAggregator, LastValueAggregator } from './last-value.js';
import { ListaggAggregator } from './listagg.js';
import { arithmeticFor } from './numeric.js';
import { ProductAggregator } from './product.js';
import { SumAggregator } from './sum.js';

/** The implicit function of primary-key and sequence.field columns. */
export const KEEP_LAST = 'primary-key';

/** Throws an OptionError when `fn` is unknown or does not fit `field`'s type. */
export function checkAggregateFunction(fn: string, field: DataField): void {
  if (fn === KEEP_LAST) return;
  const option = `fields.${field.name}.aggregate-function`;
  if (!(AGGREGATE_FUNCTIONS as readonly string[]).includes(fn)) {
    throw new OptionError(
      `unknown aggregate function '${fn}' for column ${field.name}; use one of ${AGGREGATE_FUNCTIONS.join(', ')}`,
      option,
    );
  }
  const accepts = AGGREGATE_FUNCTION_TYPES[fn as keyof typeof AGGREGATE_FUNCTION_TYPES];
  if (accepts && !accepts.includes(field.type.root)) {
    throw new OptionError(
      `aggregate function '${fn}' does not apply to column ${field.name} of type ${field.type.root}; it takes ${accepts.join(', ')}`,
      option,
    );
  }
}

/** Builds the aggregator for `ctx.fn` (already checked), wrapped to ignore retractions if asked. */
export function createAggregator(ctx: AggregatorContext, ignoreRetract: boolean): FieldAggregator {
  const agg = baseAggregator(ctx);
  return ignoreRetract ? new IgnoreRetract(agg) : agg;
}

function baseAggregator(ctx: AggregatorContext): FieldAggregator {
  switch (ctx.fn) {
    case KEEP_LAST:
      return new KeepLastAggregator(ctx);
    case 'last_value':
      return new LastValueAggregator(ctx);
    case 'last_non_null_value':
      return new LastNonNullValueAggregator(ctx);
    case 'first_value':
      return new FirstValueAggregator(ctx);
    case 'first_non_null_value':
      return new FirstNonNullValueAggregator(ctx);
    case 'min':
      return new ExtremumAggregator(ctx, 1);
    case 'max':
      return new ExtremumAggregator(ctx, -1);
    case 'bool_and':
      return new BoolAggregator(ctx, false);
    case 'bool_or':
      return new BoolAggregator(ctx, true);
    case 'listagg':
      return new ListaggAggregator(ctx);
    case 'sum':
      return new SumAggregator(ctx, arithmeticFor(ctx.field, ctx.fn)!);
    case 'product':
      return new ProductAggregator(ctx, arithmeticFor(ctx.field, ctx.fn)!);
    case 'count':
      return new CountAggregator(ctx, arithmeticFor(ctx.field, ctx.fn)!);
  }
  throw new OptionError(
    `unknown aggregate function '${ctx.fn}' for column ${ctx.field.name}`,
    `fields.${ctx.field.name}.aggregate-function`,
  );
}
