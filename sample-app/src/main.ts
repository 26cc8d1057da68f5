import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module.js';
import { DEFAULT_PORT, DEFAULT_REDIS_URL } from './config/app.defaults.js';
import { probeRedis } from './config/redis.probe.js';

const redisFailure = await probeRedis(process.env.REDIS_URL || DEFAULT_REDIS_URL);
if (redisFailure) {
  console.error(redisFailure);
  process.exit(1);
}

try {
  const app = await NestFactory.create(AppModule, { abortOnError: false });
  // SIGTERM/SIGINT close the app: the counter module stops its timer and runs one last flush first.
  app.enableShutdownHooks(['SIGTERM', 'SIGINT']);
  const port = Number(app.get(ConfigService).get<string>('PORT') || DEFAULT_PORT);
  await app.listen(port);
  Logger.log(`Online judge listening on http://localhost:${port}`, 'Main');
} catch (error) {
  console.error(`The online judge could not start: ${(error as Error).message}`);
  process.exit(1);
}
