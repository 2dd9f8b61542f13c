/**
 * The headers of every page and asset. The pages hold an API key or the admin token in the tab, so nothing but this
 * origin's own files may run, style, frame or receive from them: no inline script or style (the pages have none),
 * no form posting anywhere (the key forms are read by script, never submitted), media only from this origin or the
 * blob URLs the console makes of a video it fetched with the key, and no Referer leaving with a page's address.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "media-src 'self' blob:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

export const PAGE_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};
