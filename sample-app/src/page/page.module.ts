import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Problem } from '../problems/problem.entity.js';
import { OverviewController } from './overview.controller.js';
import { OverviewService } from './overview.service.js';
import { PageAssetsController } from './page-assets.controller.js';
import { PageAssets } from './page.assets.js';

@Module({
  imports: [TypeOrmModule.forFeature([Problem])],
  controllers: [OverviewController, PageAssetsController],
  providers: [OverviewService, PageAssets],
  exports: [PageAssets],
})
export class PageModule {}
