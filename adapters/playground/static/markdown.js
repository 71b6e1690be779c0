// A small, safe Markdown renderer: everything is HTML-escaped first, then code fences,
// inline code, bold, italics, headings, quotes, lists and http(s)/mailto links are recognised.
"use strict";

(function () {
  const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

  function escapeHtml(text) {
    return text.replace(/[&<>"']/g, (c) => ESCAPES[c]);
  }

  // Inline Markdown of one escaped line: code spans are set aside first so nothing inside them
  // is touched, then links, bold and italics.
  function inline(raw) {
    const codes = [];
    let text = escapeHtml(raw.replace(/\u0000/g, "")).replace(/`([^`\n]+)`/g, (_, code) => {
      codes.push(code);
      return `\u0000${codes.length - 1}\u0000`;
    });
    text = text.replace(
      /\[([^\]\n]+)\]\(((?:https?:\/\/|mailto:)[^\s)]+)\)/g,
      (_, label, url) => `<a href="${url}" target="_blank" rel="noopener noreferrer">${label}</a>`,
    );
    text = text.replace(
      /(^|[\s(])((?:https?:\/\/)[^\s<]+[^\s<.,;:!?)'"])/g,
      (_, lead, url) => `${lead}<a href="${url}" target="_blank" rel="noopener noreferrer">${url}</a>`,
    );
    text = text
      .replace(/\*\*([^*\n]+?)\*\*/g, "<strong>$1</strong>")
      .replace(/(^|[^\w])__([^_\n]+?)__(?!\w)/g, "$1<strong>$2</strong>")
      .replace(/(^|[^*\w])\*([^*\s](?:[^*\n]*?[^*\s])?)\*(?!\w)/g, "$1<em>$2</em>")
      .replace(/(^|[^\w])_([^_\s](?:[^_\n]*?[^_\s])?)_(?!\w)/g, "$1<em>$2</em>")
      .replace(/~~([^~\n]+?)~~/g, "<del>$1</del>");
    return text.replace(/\u0000(\d+)\u0000/g, (_, i) => `<code>${codes[Number(i)]}</code>`);
  }

  const FENCE = /^\s*(`{3,}|~{3,})\s*([\w+#.-]*)\s*$/;
  const ITEM = /^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/;
  const HEADING = /^(#{1,6})\s+(.*)$/;
  const QUOTE = /^\s*>\s?(.*)$/;

  function renderMarkdown(source) {
    const lines = String(source).replace(/\r\n?/g, "\n").split("\n");
    const out = [];
    let paragraph = [];
    const endParagraph = () => {
      if (paragraph.length) out.push(`<p>${paragraph.map(inline).join("<br>")}</p>`);
      paragraph = [];
    };
    let i = 0;
    while (i < lines.length) {
      const line = lines[i];
      const fence = line.match(FENCE);
      if (fence) {
        endParagraph();
        const code = [];
        i += 1;
        while (i < lines.length && !lines[i].trim().startsWith(fence[1])) code.push(lines[i++]);
        i += 1; // the closing fence (or the end of an unfinished block while it streams)
        const lang = fence[2] ? ` data-lang="${escapeHtml(fence[2])}"` : "";
        out.push(`<pre${lang}><code>${escapeHtml(code.join("\n"))}</code></pre>`);
        continue;
      }
      if (ITEM.test(line)) {
        endParagraph();
        const ordered = /\d/.test(line.match(ITEM)[2]);
        const items = [];
        while (i < lines.length && ITEM.test(lines[i]) && /\d/.test(lines[i].match(ITEM)[2]) === ordered) {
          items.push(`<li>${inline(lines[i].match(ITEM)[3])}</li>`);
          i += 1;
        }
        const tag = ordered ? "ol" : "ul";
        out.push(`<${tag}>${items.join("")}</${tag}>`);
        continue;
      }
      const heading = line.match(HEADING);
      if (heading) {
        endParagraph();
        const level = Math.min(heading[1].length + 2, 6);
        out.push(`<h${level}>${inline(heading[2])}</h${level}>`);
      } else if (QUOTE.test(line)) {
        endParagraph();
        const quoted = [];
        while (i < lines.length && QUOTE.test(lines[i])) {
          quoted.push(inline(lines[i].match(QUOTE)[1]));
          i += 1;
        }
        out.push(`<blockquote>${quoted.join("<br>")}</blockquote>`);
        continue;
      } else if (line.trim() === "") {
        endParagraph();
      } else {
        paragraph.push(line);
      }
      i += 1;
    }
    endParagraph();
    return out.join("");
  }

  window.renderMarkdown = renderMarkdown;
  window.escapeHtml = escapeHtml;
})();
