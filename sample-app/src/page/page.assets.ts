import { readFileSync } from 'node:fs';
import { Injectable } from '@nestjs/common';

/** A file of the page, with the Content-Type it is served as. */
export interface PageAsset {
  type: string;
  content: string;
}

/** sample-app/public/, from src/page/ or dist/page/ alike. */
const PUBLIC_DIRECTORY = new URL('../../public/', import.meta.url);

const SCRIPT = 'text/javascript; charset=utf-8';

/** The page's files: the page, its stylesheet, and its script's modules. */
const TYPES: Record<string, string> = {
  'index.html': 'text/html; charset=utf-8',
  'page.css': 'text/css; charset=utf-8',
  'page.js': SCRIPT,
  'api.js': SCRIPT,
  'dom.js': SCRIPT,
  'problems.js': SCRIPT,
  'inspector.js': SCRIPT,
  'flush-panel.js': SCRIPT,
  'chart.js': SCRIPT,
  'burst.js': SCRIPT,
  'sparkline.js': SCRIPT,
  'trending.js': SCRIPT,
};

/**
 * The page's files, read once at startup. Only these names are served, so no request path ever
 * reaches the file system.
 */
@Injectable()
export class PageAssets {
  private readonly assets = new Map(
    Object.entries(TYPES).map(([name, type]) => [
      name,
      { type, content: readFileSync(new URL(name, PUBLIC_DIRECTORY), 'utf8') },
    ]),
  );

  get(name: string): PageAsset | undefined {
    return this.assets.get(name);
  }
}
