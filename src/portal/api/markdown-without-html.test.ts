import { documentWithoutHtml, markdownWithoutHtml } from './markdown-without-html.js';

describe('markdownWithoutHtml', () => {
  it('writes every < outside code as &lt;, keeping code spans and fenced blocks as written', () => {
    expect(markdownWithoutHtml('A <b>city</b>, `Array<City>`.')).toBe('A &lt;b>city&lt;/b>, `Array<City>`.');
    expect(markdownWithoutHtml('```ts\nconst a: Array<City> = [];\n```\n<img src=x>')).toBe(
      '```ts\nconst a: Array<City> = [];\n```\n&lt;img src=x>',
    );
  });

  it('reads no code where Markdown reads none: a fence past a blank line, a span over lines, an escaped backtick', () => {
    expect(markdownWithoutHtml('a ```\n\n<img src=x>\n\n``` b')).toBe('a ```\n\n&lt;img src=x>\n\n``` b');
    expect(markdownWithoutHtml('`a\n<img src=x>`')).toBe('`a\n&lt;img src=x>`');
    expect(markdownWithoutHtml('\\`<img src=x>`')).toBe('\\`&lt;img src=x>`');
  });

  it('changes only the description texts of a document', () => {
    const document = {
      info: { title: 'A <b>', description: '<b>x</b>' },
      paths: { '/a': { get: { summary: '<i>', parameters: [{ description: '<i>y</i>', example: '<z>' }] } } },
      components: { schemas: { Item: { properties: { description: { type: 'string' } } } } },
    };
    expect(documentWithoutHtml(document)).toEqual({
      info: { title: 'A <b>', description: '&lt;b>x&lt;/b>' },
      paths: {
        '/a': { get: { summary: '<i>', parameters: [{ description: '&lt;i>y&lt;/i>', example: '<z>' }] } },
      },
      components: { schemas: { Item: { properties: { description: { type: 'string' } } } } },
    });
  });
});
