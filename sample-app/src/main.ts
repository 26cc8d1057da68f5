import 'reflect-metadata';
import { constants } from 'node:os';
import { Logger } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module.js';
import { DEFAULT_PORT, DEFAULT_REDIS_URL } from './config/app.defaults.js';
import { redisForTheApp } from './config/redis.bootstrap.js';

const SHUTDOWN_SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP'] as const;

// Until Nest's shutdown hooks are in place, a signal exits at once: through process.exit, so that the
// 'exit' event stops a throwaway Redis, which a default signal death would leave running.
const exitNow = (signal: NodeJS.Signals) => process.exit(128 + constants.signals[signal]);
for (const signal of SHUTDOWN_SIGNALS) process.once(signal, exitNow);

try {
  // Later reads (the counter module, the demo data) take the URL from the environment.
  process.env.REDIS_URL = await redisForTheApp(process.env.REDIS_URL || DEFAULT_REDIS_URL);
  const app = await NestFactory.create(AppModule, { abortOnError: false });
  // A signal closes the app (the counter module stops its timer and runs one last flush first), then exits
  // through process.exit, so that the 'exit' event stops a throwaway Redis. Nest 12's enableShutdownHooks
  // could do both (`useProcessExit`); Nest 11's ends the process by the signal, without that event.
  for (const signal of SHUTDOWN_SIGNALS) {
    process.off(signal, exitNow);
    process.once(signal, () => void app.close().finally(() => process.exit(0)));
  }
  const port = Number(app.get(ConfigService).get<string>('PORT') || DEFAULT_PORT);
  await app.listen(port);
  Logger.log(`Online judge listening on http://localhost:${port}`, 'Main');
} catch (error) {
  console.error(`The online judge could not start: ${(error as Error).message}`);
  process.exit(1);
}
