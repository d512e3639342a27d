import { vi, type MockInstance } from 'vitest';

/**
 * Spies on `method` of `proto` and pushes `label` to `order` at each call, then calls the method
 * as it was: the order in which a pipeline's stages ran. Restore with the spy's `mockRestore()`.
 */
export function recordCalls<T extends object>(
  order: string[],
  proto: T,
  method: keyof T & string,
  label: string,
): MockInstance {
  const original = proto[method] as unknown as (...args: unknown[]) => unknown;
  return (vi.spyOn(proto as any, method) as MockInstance).mockImplementation(function (
    this: unknown,
    ...args: unknown[]
  ) {
    order.push(label);
    return original.apply(this, args);
  });
}
