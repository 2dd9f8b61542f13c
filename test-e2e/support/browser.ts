import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { IN_CI, REPO_ROOT } from '@gateway/testing';

/**
 * Debian's chromium, driven by playwright-core (Playwright's own browser download cannot run here). `.ci/run`
 * installs it when missing; outside CI a machine without it skips the browser suites with the reason, under CI=true
 * their start fails.
 */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export function chromiumSkipReason(): string | undefined {
  if (IN_CI || fs.existsSync(CHROMIUM)) return undefined;
  return `no chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH); outside CI that is a skip, under CI=true a failure`;
}

export function launchChromium(): Promise<Browser> {
  // --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
  return chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}

/**
 * Where the suite's screenshots go: the README's, docs/screenshots/, with UPDATE_SCREENSHOTS=1; otherwise a folder
 * under the system's temporary one, so a test run never rewrites files of the tree (each run's ids and times differ).
 */
export const SCREENSHOTS =
  process.env.UPDATE_SCREENSHOTS === '1' ? path.join(REPO_ROOT, 'docs', 'screenshots') : path.join(os.tmpdir(), 'gateway-page-screenshots');

export const DESKTOP = { width: 1280, height: 860 };
/** A common phone width (iPhone 12 to 15). */
export const PHONE = { width: 390, height: 844 };

export async function screenshot(page: Page, name: string): Promise<void> {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

/**
 * WCAG 2.x contrast ratio of two CSS colours as getComputedStyle gives them (`rgb(…)` / `rgba(…)`, opaque ones), by
 * the standard's relative luminance formula.
 */
export function contrast(a: string, b: string): number {
  const lum = (css: string) => {
    const m = css.match(/rgba?\(([^)]+)\)/);
    if (!m) throw new Error(`not an rgb colour: ${css}`);
    const [r, g, bl] = (m[1] as string).split(',').map((x) => Number.parseFloat(x) / 255) as [number, number, number];
    const lin = (c: number) => (c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);
    return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(bl);
  };
  const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p) as [number, number];
  return (x + 0.05) / (y + 0.05);
}

/** The colour of an element's text and the first opaque background behind it, in the page. */
export function colours(page: Page, selector: string): Promise<Array<{ text: string; fg: string; bg: string }>> {
  return page.$$eval(selector, (els) =>
    els.map((el) => {
      let bg = 'rgba(0, 0, 0, 0)';
      for (let e: Element | null = el; e; e = e.parentElement) {
        const c = getComputedStyle(e).backgroundColor;
        if (c && !c.startsWith('rgba(0, 0, 0, 0)') && c !== 'transparent') {
          bg = c;
          break;
        }
      }
      return {
        text: (el.textContent ?? '').trim().slice(0, 40),
        fg: getComputedStyle(el).color,
        bg: bg.startsWith('rgba(0, 0, 0, 0)') ? 'rgb(255, 255, 255)' : bg,
      };
    }),
  );
}
