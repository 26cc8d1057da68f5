import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const REPOSITORY = join(import.meta.dirname, '..', '..');

/** A source file a doc shows whole: a fenced `ts` block whose first line is `// src/<name>.ts`. */
export interface DocSourceFile {
  path: string;
  text: string;
}

/** A section of a markdown file of the repository: from its heading to the next heading of its level or above. */
export class MarkdownSection {
  private constructor(
    readonly name: string,
    private readonly text: string,
  ) {}

  /** Reads `## heading` (any level) of `file`, a path from the repository's root; throws if it is missing. */
  static read(file: string, heading: string): MarkdownSection {
    const lines = readFileSync(join(REPOSITORY, file), 'utf8').split('\n');
    const start = lines.findIndex((line) => /^#+ /.test(line) && line.replace(/^#+ /, '') === heading);
    if (start === -1) throw new Error(`${file} has no section "${heading}"`);
    const level = lines[start].indexOf(' ');
    const length = lines.slice(start + 1).findIndex((line) => new RegExp(`^#{1,${level}} `).test(line));
    const end = length === -1 ? lines.length : start + 1 + length;
    return new MarkdownSection(`${file} "${heading}"`, lines.slice(start + 1, end).join('\n'));
  }

  /** The files the section's `ts` blocks hold, named by their first line, in the order they appear. */
  sourceFiles(): DocSourceFile[] {
    return this.blocks('ts').flatMap((block) => {
      const name = /^\/\/ (src\/[\w./-]+\.ts)$/.exec(block.split('\n')[0]);
      return name ? [{ path: name[1], text: block.slice(block.indexOf('\n') + 1) }] : [];
    });
  }

  /** The commands of the section's `bash` blocks, one per line, without their comments. */
  commands(): string[] {
    return this.blocks('bash')
      .flatMap((block) => block.split('\n'))
      .map((line) => line.replace(/\s+#.*$/, '').trim())
      .filter((line) => line !== '' && !line.startsWith('#'));
  }

  private blocks(language: string): string[] {
    const fence = new RegExp('^```' + language + '\\n([\\s\\S]*?)^```$', 'gm');
    return [...this.text.matchAll(fence)].map((match) => match[1]);
  }
}
