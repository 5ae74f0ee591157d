// A small Markdown renderer for answers: fenced code blocks, headings,
// lists, block quotes, paragraphs, and inline code, bold, italics and
// links. It builds elements, never HTML strings, so a model's output
// cannot inject markup.
import type { ComponentChildren } from 'preact';

function inline(text: string): ComponentChildren[] {
  const out: ComponentChildren[] = [];
  const re = /(`[^`]+`|\*\*[^*]+\*\*|\*[^*\s][^*]*\*|_[^_\s][^_]*_|\[[^\]]+\]\((https?:\/\/[^)\s]+)\))/g;
  let last = 0;
  let m: RegExpExecArray | null;
  while ((m = re.exec(text))) {
    if (m.index > last) out.push(text.slice(last, m.index));
    const t = m[0];
    if (t.startsWith('`')) out.push(<code>{t.slice(1, -1)}</code>);
    else if (t.startsWith('**')) out.push(<strong>{t.slice(2, -2)}</strong>);
    else if (t.startsWith('[')) {
      const label = t.slice(1, t.indexOf(']'));
      out.push(
        <a href={m[2]} rel="noopener noreferrer" target="_blank">
          {label}
        </a>,
      );
    } else out.push(<em>{t.slice(1, -1)}</em>);
    last = m.index + t.length;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

export function Markdown({ text }: { text: string }) {
  const lines = text.split('\n');
  const blocks: ComponentChildren[] = [];
  let para: string[] = [];
  let list: { ordered: boolean; items: string[] } | null = null;
  const flushPara = () => {
    if (para.length) blocks.push(<p>{inline(para.join('\n'))}</p>);
    para = [];
  };
  const flushList = () => {
    if (list) {
      const items = list.items.map((it) => <li>{inline(it)}</li>);
      blocks.push(list.ordered ? <ol>{items}</ol> : <ul>{items}</ul>);
    }
    list = null;
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const fence = line.match(/^\s*```(\S*)/);
    if (fence) {
      flushPara();
      flushList();
      const code: string[] = [];
      i++;
      while (i < lines.length && !/^\s*```/.test(lines[i])) code.push(lines[i++]);
      blocks.push(
        <pre class="code" data-lang={fence[1] || undefined}>
          <code>{code.join('\n')}</code>
        </pre>,
      );
      continue;
    }
    const h = line.match(/^(#{1,4})\s+(.*)$/);
    const li = line.match(/^\s*([-*+]|\d+[.)])\s+(.*)$/);
    if (h) {
      flushPara();
      flushList();
      const H = `h${Math.min(6, h[1].length + 2)}` as 'h3';
      blocks.push(<H>{inline(h[2])}</H>);
    } else if (li) {
      flushPara();
      const ordered = /\d/.test(li[1]);
      if (!list || list.ordered !== ordered) {
        flushList();
        list = { ordered, items: [] };
      }
      list.items.push(li[2]);
    } else if (line.startsWith('>')) {
      flushPara();
      flushList();
      blocks.push(<blockquote>{inline(line.replace(/^>\s?/, ''))}</blockquote>);
    } else if (line.trim() === '') {
      flushPara();
      flushList();
    } else {
      flushList();
      para.push(line);
    }
  }
  flushPara();
  flushList();
  return <div class="md">{blocks}</div>;
}
