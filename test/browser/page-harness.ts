import type { AddressInfo } from 'node:net';
import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll } from 'vitest';
import { CHROMIUM_PATH } from '../support/chromium.js';
import { createTestDatabase, type TestDatabase } from '../../support/databases.js';
import { setEnvironment } from '../../support/environment.js';
import { deleteKeys, REDIS_URL, testRedis, uniquePrefix } from '../../support/redis.js';

/** The sample app on a SQLite database of its own, and headless Chromium with one page open on it. */
export interface PageHarness {
  app: INestApplication;
  /** The app's URL, on a free loopback port. */
  base: string;
  page: Page;
  /** Messages of dialogs the page opened (dismissed), and errors it threw. */
  dialogs: string[];
  pageErrors: string[];
  /** A query straight to the app's database. */
  sql<T = Record<string, unknown>>(query: string): Promise<T[]>;
}

/**
 * Starts the app `npm start` serves (from source, in this process) and Chromium before the suite's tests,
 * and stops both after them. The returned object is filled in by `beforeAll`.
 */
export function usePageHarness(name: string): PageHarness {
  const prefix = uniquePrefix(name);
  const redis = testRedis();
  let restoreEnvironment: (() => void) | undefined;
  const harness = { dialogs: [] as string[], pageErrors: [] as string[] } as unknown as PageHarness;
  let database: TestDatabase;
  let browser: Browser;

  beforeAll(async () => {
    database = await createTestDatabase('sqlite');
    restoreEnvironment = setEnvironment({
      DATABASE_URL: `sqlite://${String(database.options.database)}`,
      REDIS_URL,
      COUNTER_KEY_PREFIX: prefix,
    });
    const { AppModule } = await import('../../sample-app/src/app.module.js');
    harness.app = await NestFactory.create(AppModule, { logger: ['error'], abortOnError: false });
    await harness.app.listen(0, '127.0.0.1');
    harness.base = `http://127.0.0.1:${(harness.app.getHttpServer().address() as AddressInfo).port}`;
    harness.sql = (query) => harness.app.get(DataSource).query(query);

    browser = await puppeteer.launch({
      executablePath: CHROMIUM_PATH,
      headless: true,
      // Root in a container has no user namespace for Chromium's sandbox.
      args: ['--no-sandbox'],
    });
    harness.page = await browser.newPage();
    harness.page.setDefaultTimeout(30_000);
    await harness.page.setViewport({ width: 1280, height: 900 });
    harness.page.on('dialog', (dialog) => {
      harness.dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    harness.page.on('pageerror', (error) => harness.pageErrors.push(String(error)));
  });

  afterAll(async () => {
    await browser?.close();
    await harness.app?.close();
    restoreEnvironment?.();
    await deleteKeys(redis, prefix);
    redis.disconnect();
    await database?.drop();
  });

  return harness;
}
