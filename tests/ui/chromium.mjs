// What the page tests share: Debian's Chromium, headless (playwright-core, no browser
// download), and axe-core's accessibility check of a page.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

export function launchChromium() {
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
  });
}

const AXE = readFileSync(join(import.meta.dirname, 'node_modules/axe-core/axe.min.js'), 'utf8');

/** What axe-core finds serious or critical on `page`, one line each. */
export async function axeFindings(page) {
  await page.evaluate(AXE);
  const { violations } = await page.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }));
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.help}: ${v.nodes.slice(0, 5).map((n) => n.target.join(' ')).join(', ')}`);
}
