import { describe, expect, it } from 'vitest';
import { checkLayers } from '../scripts/check-layers.js';

describe('layers (docs/ARCHITECTURE.md)', () => {
  it('no import points to a higher layer and no run-time import cycle exists', () => {
    const { backEdges, cycles } = checkLayers();
    expect(backEdges).toEqual([]);
    expect(cycles).toEqual([]);
  });
});
