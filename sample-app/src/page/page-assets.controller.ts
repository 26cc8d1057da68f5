import { Controller, Get, NotFoundException, Param, Res } from '@nestjs/common';
import { PageAssets } from './page.assets.js';
import { setPageHeaders, type HeaderSink } from './page-headers.js';

@Controller('assets')
export class PageAssetsController {
  constructor(private readonly assets: PageAssets) {}

  /** GET /assets/page.css, /assets/page.js and its modules: the page's stylesheet and script. */
  @Get(':name')
  get(@Param('name') name: string, @Res({ passthrough: true }) response: HeaderSink): string {
    const asset = name === 'index.html' ? undefined : this.assets.get(name);
    if (!asset) throw new NotFoundException(`There is no asset "${name}".`);
    setPageHeaders(response, asset.type);
    return asset.content;
  }
}
