import { describe, expect, it } from 'vitest';
import { displayTableName } from '../../lib/snapshot/paths.js';

describe('displayTableName', () => {
  it('names a table as users write it, whatever the warehouse prefix', () => {
    expect(displayTableName('db.db/orders')).toBe('db.orders');
    expect(displayTableName('warehouse/shop.db/orders')).toBe('shop.orders');
    expect(displayTableName('some/other/prefix')).toBe('some/other/prefix');
  });
});
