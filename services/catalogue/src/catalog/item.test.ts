import { modelOf } from '../testing/models';
import { addedAtOf, catalogueItem, slugOf } from './item';

describe('catalogue item', () => {
  it('a model with no optional key answers every field, derived or empty', () => {
    const m = modelOf({ id: 'acme/chat-small', name: 'Chat Small', category: 'text', pricing: { prompt: '0.000001' } });
    expect(catalogueItem(m)).toEqual({
      id: 'acme/chat-small',
      slug: 'chat-small',
      name: 'Chat Small',
      description: '',
      category: 'text',
      status: 'available',
      unit: '1M tokens',
      price: 1,
      reference: 1,
      speed: '',
      featured: false,
      capabilities: ['chat'],
      contextLength: 8192,
      addedAt: null,
    });
  });

  it('a model with every optional key answers them as the config wrote them', () => {
    const m = modelOf({
      id: 'acme/chat-small',
      category: 'text',
      description: 'Small',
      status: 'coming_soon',
      unit: '1M tokens',
      price: 2,
      reference_price: 4,
      speed: 'fast',
      featured: true,
      capabilities: ['chat', 'vision'],
      context_length: 32768,
      added_at: '2025-03-01T12:00:00+02:00',
    });
    expect(catalogueItem(m)).toMatchObject({
      description: 'Small',
      status: 'coming_soon',
      unit: '1M tokens',
      price: 2,
      reference: 4,
      speed: 'fast',
      featured: true,
      capabilities: ['chat', 'vision'],
      contextLength: 32768,
      addedAt: '2025-03-01T10:00:00.000Z',
    });
  });

  it('a model without a context length (not a text model) answers contextLength null', () => {
    expect(catalogueItem(modelOf({ id: 'a/e', category: 'embedding' })).contextLength).toBeNull();
  });

  it('the slug is the id after its author, the {slug} of the single-model route', () => {
    expect(slugOf('acme/chat-small')).toBe('chat-small');
    expect(slugOf('acme/v1:chat.large')).toBe('v1:chat.large');
  });

  it('a bare added_at date is its midnight UTC', () => {
    expect(addedAtOf(modelOf({ id: 'a/e', category: 'embedding', added_at: '2024-02-29' }))).toBe('2024-02-29T00:00:00.000Z');
  });

  it('without added_at, the recorded first appearance; the config wins over it; null where nothing recorded the model', () => {
    const seen = new Map([
      ['a/e', '2026-01-02T03:04:05.000Z'],
      ['a/d', '2026-01-02T03:04:05.000Z'],
    ]);
    expect(catalogueItem(modelOf({ id: 'a/e', category: 'embedding' }), seen).addedAt).toBe('2026-01-02T03:04:05.000Z');
    expect(addedAtOf(modelOf({ id: 'a/d', category: 'embedding', added_at: '2024-02-29' }), seen)).toBe('2024-02-29T00:00:00.000Z');
    expect(addedAtOf(modelOf({ id: 'a/other', category: 'embedding' }), seen)).toBeNull();
  });
});
