// SPDX-License-Identifier: MIT
/*
 * out_svg.c: a self-contained interactive flamegraph.
 *
 * The layout follows flamegraph.pl: the root at the bottom, callers below
 * callees, siblings in alphabetical order, width proportional to the
 * weight, frames narrower than 0.1 px left out.  Every frame is
 *   <g class="f" data-x=START data-w=WEIGHT data-d=DEPTH>
 *     <title>name (1.2 MiB, 34.5%)</title><rect .../><text ...>name</text></g>
 * so the hover title works in any viewer, and a small script (inline, no
 * network) adds click to zoom, Ctrl-F / the "Search" button to highlight
 * frames matching a regular expression with the matched share, Esc to
 * reset, and a details line at the bottom.  URL parameters ?s=REGEX and
 * ?z=NAME search and zoom on load (for links, and for the render test).
 */
#include <stdlib.h>
#include <string.h>

#include "prof_int.h"

#define FRAME_H 16
#define FONT_SIZE 12
#define XPAD 10
#define TOP_PAD 64 /* title, subtitle, search/reset */
#define BOTTOM_PAD 34
#define MIN_PX 0.1
#define CHAR_W (FONT_SIZE * 0.59)

struct node {
	uint32_t label;
	uint32_t depth;
	uint64_t value, start;
	int32_t first_child, last_child, next;
};

struct tree {
	struct node *n;
	size_t len, cap;
	uint32_t max_depth;
};

static int32_t new_node(struct tree *t, uint32_t label, uint32_t depth)
{
	struct node *n;

	if (prof_grow(&t->n, &t->cap, t->len + 1, sizeof(*t->n)))
		return -1;
	n = &t->n[t->len];
	memset(n, 0, sizeof(*n));
	n->label = label;
	n->depth = depth;
	n->first_child = n->last_child = n->next = -1;
	if (depth > t->max_depth)
		t->max_depth = depth;
	return (int32_t)t->len++;
}

/*
 * Stacks in label order share prefixes with their predecessor, so a frame
 * that already exists under a parent is always that parent's last child.
 */
static int build_tree(struct tree *t, const struct hc_report *r, const uint64_t *wt,
		      const uint32_t *order)
{
	size_t i;

	if (new_node(t, UINT32_MAX, 0) < 0)
		return -1;
	for (i = 0; i < r->nstacks; i++) {
		const struct rstack *s = &r->stacks[order[i]];
		uint64_t w = wt[order[i]];
		int32_t cur = 0;
		uint32_t k;

		if (!w)
			continue;
		t->n[0].value += w;
		for (k = 0; k < s->n; k++) {
			uint32_t lab = r->frames[s->first + k];
			int32_t c = t->n[cur].last_child;

			if (c < 0 || t->n[c].label != lab) {
				c = new_node(t, lab, k + 1);
				if (c < 0)
					return -1;
				if (t->n[cur].last_child >= 0)
					t->n[t->n[cur].last_child].next = c;
				else
					t->n[cur].first_child = c;
				t->n[cur].last_child = c;
			}
			t->n[c].value += w;
			cur = c;
		}
	}
	return 0;
}

/* Children start where the previous sibling ends; self time is at the right. */
static void place(struct tree *t)
{
	size_t i;

	/* Nodes are created parents first, so one forward pass suffices. */
	for (i = 0; i < t->len; i++) {
		uint64_t x = t->n[i].start;
		int32_t c;

		for (c = t->n[i].first_child; c >= 0; c = t->n[c].next) {
			t->n[c].start = x;
			x += t->n[c].value;
		}
	}
}

/* XML text: escape markup, replace control bytes and invalid UTF-8 with '?'. */
static void xml_text(FILE *f, const char *s, size_t max)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = 0;

	while (*p && n < max) {
		unsigned char c = *p;
		int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
		int k;

		for (k = 1; k < len; k++)
			if ((p[k] & 0xc0) != 0x80)
				len = 0;
		if (!len || (c < 0x20 && c != '\t') || c == 0x7f) {
			putc('?', f);
			p++;
			n++;
			continue;
		}
		if (c == '<')
			fputs("&lt;", f);
		else if (c == '>')
			fputs("&gt;", f);
		else if (c == '&')
			fputs("&amp;", f);
		else if (c == '"')
			fputs("&quot;", f);
		else if (c == '\'')
			fputs("&apos;", f);
		else
			fwrite(p, 1, (size_t)len, f);
		p += len;
		n++;
	}
}

static void fmt_size(char *buf, size_t len, uint64_t v, bool objects)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double a = (double)v;
	unsigned u = 0;

	if (objects) {
		snprintf(buf, len, "%llu objects", (unsigned long long)v);
		return;
	}
	if (v < 1024) {
		snprintf(buf, len, "%llu B", (unsigned long long)v);
		return;
	}
	while (a >= 1023.95 && u + 1 < sizeof(units) / sizeof(units[0])) {
		a /= 1024;
		u++;
	}
	snprintf(buf, len, "%.1f %s", a, units[u]);
}

/* Deterministic colours from the name: greens for memory, reds/blues for diffs. */
static void colour(char *buf, size_t len, const char *name, int mode, bool unknown)
{
	uint32_t h = prof_hash(name, strlen(name), 7);
	unsigned v1 = h & 0xff, v2 = (h >> 8) & 0xff;

	if (unknown)
		snprintf(buf, len, "rgb(%u,%u,%u)", 160 + v1 % 30, 160 + v1 % 30, 160 + v1 % 30);
	else if (mode == 1)
		snprintf(buf, len, "rgb(%u,%u,%u)", 200 + v1 * 55 / 255, 60 + v2 * 90 / 255,
			 50 + v2 * 60 / 255);
	else if (mode == 2)
		snprintf(buf, len, "rgb(%u,%u,%u)", 50 + v2 * 60 / 255, 110 + v2 * 80 / 255,
			 200 + v1 * 55 / 255);
	else
		snprintf(buf, len, "rgb(%u,%u,%u)", v1 * 60 / 255, 170 + v2 * 70 / 255,
			 40 + v1 * 120 / 255);
}

static bool is_unknown(const char *name)
{
	const char *plus = strstr(name, "+0x");

	return (name[0] == '0' && name[1] == 'x') || (plus && !strchr(plus, ' ') && !strchr(name, '('));
}

static const char script[] =
	"<script type=\"text/ecmascript\"><![CDATA[\n"
	"'use strict';\n"
	"var svg, frames, details, total, unit, W, XPAD, matchedtxt, searchbtn, resetbtn;\n"
	"var zoomed = null, re = null;\n"
	"function init(evt) {\n"
	"  svg = document.documentElement;\n"
	"  frames = Array.prototype.slice.call(document.querySelectorAll('g.f'));\n"
	"  details = document.getElementById('details').firstChild;\n"
	"  matchedtxt = document.getElementById('matched');\n"
	"  searchbtn = document.getElementById('search');\n"
	"  resetbtn = document.getElementById('unzoom');\n"
	"  total = +svg.getAttribute('data-total'); unit = svg.getAttribute('data-unit');\n"
	"  W = +svg.getAttribute('width'); XPAD = +svg.getAttribute('data-xpad');\n"
	"  frames.forEach(function (g) {\n"
	"    g.x0 = +g.getAttribute('data-x'); g.w0 = +g.getAttribute('data-w');\n"
	"    g.d = +g.getAttribute('data-d');\n"
	"    g.name = g.querySelector('title').textContent.replace(/ \\([^()]*\\)$/, '');\n"
	"    g.addEventListener('click', function () { zoom(g); });\n"
	"    g.addEventListener('mouseover', function () { details.nodeValue = label(g); });\n"
	"    g.addEventListener('mouseout', function () { details.nodeValue = ' '; });\n"
	"  });\n"
	"  searchbtn.addEventListener('click', function () { search_prompt(); });\n"
	"  resetbtn.addEventListener('click', function () { zoom(null); });\n"
	"  window.addEventListener('keydown', function (e) {\n"
	"    if ((e.ctrlKey || e.metaKey) && e.key === 'f') { e.preventDefault(); search_prompt(); }\n"
	"    else if (e.key === 'Escape') { zoom(null); search(null); }\n"
	"  });\n"
	"  var q = new URLSearchParams(location.search);\n"
	"  if (q.get('z')) zoom(frames.filter(function (g) { return g.name === q.get('z'); })[0] || null);\n"
	"  if (q.get('s')) search(q.get('s'));\n"
	"}\n"
	"function human(v) {\n"
	"  if (unit !== 'bytes') return Math.round(v) + ' ' + unit;\n"
	"  var u = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'], i = 0;\n"
	"  while (v >= 1023.95 && i < u.length - 1) { v /= 1024; i++; }\n"
	"  return (i ? v.toFixed(1) : Math.round(v)) + ' ' + u[i];\n"
	"}\n"
	"function label(g) {\n"
	"  var s = g.name + ' (' + human(g.w0) + ', ' + (100 * g.w0 / total).toFixed(2) + '%';\n"
	"  if (zoomed && zoomed !== g) s += ', ' + (100 * g.w0 / zoomed.w0).toFixed(2) + '% of zoom';\n"
	"  return s + ')';\n"
	"}\n"
	"function fit(g, x, w) {\n"
	"  var r = g.querySelector('rect'), t = g.querySelector('text');\n"
	"  r.setAttribute('x', x.toFixed(1)); r.setAttribute('width', Math.max(0, w).toFixed(1));\n"
	"  t.setAttribute('x', (x + 3).toFixed(1));\n"
	"  var n = Math.floor((w - 6) / (" "7.08" "));\n"
	"  t.textContent = n < 3 ? '' : (g.name.length <= n ? g.name : g.name.slice(0, n - 2) + '..');\n"
	"}\n"
	"function zoom(z) {\n"
	"  zoomed = z;\n"
	"  var x0 = z ? z.x0 : 0, w0 = z ? z.w0 : total, scale = (W - 2 * XPAD) / w0;\n"
	"  resetbtn.style.opacity = z ? 1 : 0.3;\n"
	"  frames.forEach(function (g) {\n"
	"    var inside = g.x0 >= x0 && g.x0 + g.w0 <= x0 + w0 + 1e-6;\n"
	"    var parent = z && g.d < z.d && g.x0 <= x0 && g.x0 + g.w0 >= x0 + w0 - 1e-6;\n"
	"    if (!z || (inside && g.d >= z.d)) {\n"
	"      g.style.display = ''; g.style.opacity = '';\n"
	"      fit(g, XPAD + (g.x0 - x0) * scale, g.w0 * scale);\n"
	"    } else if (parent) {\n"
	"      g.style.display = ''; g.style.opacity = 0.5; fit(g, XPAD, W - 2 * XPAD);\n"
	"    } else {\n"
	"      g.style.display = 'none';\n"
	"    }\n"
	"  });\n"
	"  if (re) search(re.source);\n"
	"}\n"
	"function search_prompt() {\n"
	"  var s = prompt('Search frames (regular expression):', re ? re.source : '');\n"
	"  if (s !== null) search(s);\n"
	"}\n"
	"function search(s) {\n"
	"  re = null;\n"
	"  if (s) { try { re = new RegExp(s); } catch (e) { re = null; } }\n"
	"  var spans = [];\n"
	"  frames.forEach(function (g) {\n"
	"    var r = g.querySelector('rect');\n"
	"    if (!r.orig) r.orig = r.getAttribute('fill');\n"
	"    if (re && re.test(g.name)) {\n"
	"      r.setAttribute('fill', 'rgb(230,0,230)'); g.classList.add('match');\n"
	"      spans.push([g.x0, g.x0 + g.w0]);\n"
	"    } else {\n"
	"      r.setAttribute('fill', r.orig); g.classList.remove('match');\n"
	"    }\n"
	"  });\n"
	"  spans.sort(function (a, b) { return a[0] - b[0] || b[1] - a[1]; });\n"
	"  var sum = 0, end = -1;\n"
	"  spans.forEach(function (s) {\n"
	"    if (s[0] >= end) { sum += s[1] - s[0]; end = s[1]; }\n"
	"    else if (s[1] > end) { sum += s[1] - end; end = s[1]; }\n"
	"  });\n"
	"  matchedtxt.textContent = re ? 'Matched: ' + human(sum) + ' (' + (100 * sum / total).toFixed(1) + '%)' : ' ';\n"
	"  searchbtn.textContent = re ? 'Search: /' + re.source + '/' : 'Search';\n"
	"}\n"
	"]]></script>\n";

int out_svg(struct hc_report *r, const struct hc_write_opts *w, FILE *f, struct hc_err *err)
{
	unsigned width = w->width ? w->width : 1200;
	uint64_t *wt = report_weights(r, w);
	uint32_t *order = report_sorted_stacks(r);
	struct tree t = { 0 };
	double scale;
	unsigned height;
	char title[512], sub[256], tot[64], per[64];
	int mode = !r->base ? 0 : w->shrink ? 2 : 1;
	size_t i;
	int rc = -2;

	(void)err;
	if (width < 200)
		width = 200;
	if (!wt || !order || build_tree(&t, r, wt, order))
		goto out;
	place(&t);
	scale = t.n[0].value ? (double)(width - 2 * XPAD) / (double)t.n[0].value : 0;
	height = TOP_PAD + BOTTOM_PAD + (t.max_depth + 1) * FRAME_H;
	fmt_size(tot, sizeof(tot), t.n[0].value, w->objects);
	fmt_size(per, sizeof(per), r->tot.period, false);
	if (w->title)
		snprintf(title, sizeof(title), "%s", w->title);
	else if (r->base)
		snprintf(title, sizeof(title), "Heap %s: %s", w->shrink ? "shrink" : "growth",
			 r->prof->name);
	else
		snprintf(title, sizeof(title), "Heap in use: %s", r->prof->name);
	if (r->tot.period)
		snprintf(sub, sizeof(sub), "%s%s %s, %zu stacks; sampled every %s, un-biased",
			 r->base ? (w->shrink ? "shrank by " : "grew by ") : "", tot,
			 r->base ? "" : "live", r->tot.nstacks, per);
	else /* gperftools' heap profiler: no sampling */
		snprintf(sub, sizeof(sub), "%s%s %s, %zu stacks; every allocation recorded",
			 r->base ? (w->shrink ? "shrank by " : "grew by ") : "", tot,
			 r->base ? "" : "live", r->tot.nstacks);

	fprintf(f, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
		   "<!DOCTYPE svg PUBLIC \"-//W3C//DTD SVG 1.1//EN\" "
		   "\"http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd\">\n");
	fprintf(f,
		"<svg version=\"1.1\" width=\"%u\" height=\"%u\" viewBox=\"0 0 %u %u\" "
		"onload=\"init(evt)\" xmlns=\"http://www.w3.org/2000/svg\" "
		"xmlns:xlink=\"http://www.w3.org/1999/xlink\" data-total=\"%llu\" "
		"data-unit=\"%s\" data-xpad=\"%d\">\n",
		width, height, width, height, (unsigned long long)t.n[0].value,
		w->objects ? "objects" : "bytes", XPAD);
	fprintf(f, "<!-- heapctl %s flamegraph. Click a frame to zoom, Ctrl-F or 'Search' to "
		   "highlight, Esc to reset. -->\n", HC_VERSION);
	fprintf(f, "<defs><linearGradient id=\"bg\" y1=\"0\" y2=\"1\" x1=\"0\" x2=\"0\">"
		   "<stop stop-color=\"#eeeeee\" offset=\"5%%\"/>"
		   "<stop stop-color=\"#e0e0ff\" offset=\"95%%\"/></linearGradient></defs>\n");
	fprintf(f, "<style type=\"text/css\">\n"
		   "text { font-family: Verdana, 'DejaVu Sans', sans-serif; font-size: %dpx; "
		   "fill: rgb(0,0,0); }\n"
		   "g.f:hover { stroke: black; stroke-width: 0.5; cursor: pointer; }\n"
		   "g.f text { pointer-events: none; }\n"
		   "#title { text-anchor: middle; font-size: 17px; }\n"
		   "#sub { text-anchor: middle; fill: rgb(80,80,80); }\n"
		   "#search, #unzoom { cursor: pointer; }\n"
		   "#search:hover, #unzoom:hover { fill: rgb(0,0,200); }\n"
		   "</style>\n",
		FONT_SIZE);
	fputs(script, f);
	fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%u\" height=\"%u\" fill=\"url(#bg)\"/>\n", width,
		height);
	fprintf(f, "<text id=\"title\" x=\"%u\" y=\"24\">", width / 2);
	xml_text(f, title, 200);
	fprintf(f, "</text>\n<text id=\"sub\" x=\"%u\" y=\"42\">", width / 2);
	xml_text(f, sub, 250);
	fprintf(f, "</text>\n");
	fprintf(f, "<text id=\"unzoom\" x=\"%d\" y=\"24\" style=\"opacity:0.3\">Reset Zoom</text>\n",
		XPAD);
	fprintf(f, "<text id=\"search\" x=\"%u\" y=\"24\" text-anchor=\"end\">Search</text>\n",
		width - XPAD);
	fprintf(f, "<text id=\"matched\" x=\"%u\" y=\"%u\" text-anchor=\"end\"> </text>\n",
		width - XPAD, height - 12);
	fprintf(f, "<text id=\"details\" x=\"%d\" y=\"%u\"> </text>\n", XPAD, height - 12);
	if (!t.n[0].value)
		fprintf(f, "<text x=\"%u\" y=\"%u\" text-anchor=\"middle\">%s</text>\n", width / 2,
			TOP_PAD + 20, r->base ? "nothing changed in this direction" : "empty profile");
	fputs("<g id=\"frames\">\n", f);
	for (i = 0; i < t.len; i++) {
		const struct node *n = &t.n[i];
		const char *name = i ? report_label(r, n->label) : "all";
		double x = XPAD + (double)n->start * scale, wd = (double)n->value * scale;
		unsigned y = height - BOTTOM_PAD - (n->depth + 1) * FRAME_H;
		char col[48], sz[64];
		size_t fit;

		if (wd < MIN_PX)
			continue;
		colour(col, sizeof(col), name, i ? mode : 0, i && is_unknown(name));
		if (!i)
			snprintf(col, sizeof(col), "rgb(200,200,200)");
		fmt_size(sz, sizeof(sz), n->value, w->objects);
		fprintf(f, "<g class=\"f\" data-x=\"%llu\" data-w=\"%llu\" data-d=\"%u\"><title>",
			(unsigned long long)n->start, (unsigned long long)n->value, n->depth);
		xml_text(f, name, 4096);
		fprintf(f, " (%s, %.2f%%", sz,
			t.n[0].value ? 100.0 * (double)n->value / (double)t.n[0].value : 0.0);
		if (!w->objects && n->value >= 1024)
			fprintf(f, ", %llu bytes", (unsigned long long)n->value);
		fputs(")</title>", f);
		fprintf(f, "<rect x=\"%.1f\" y=\"%u\" width=\"%.1f\" height=\"%d\" fill=\"%s\" "
			   "rx=\"2\" ry=\"2\"/>", x, y, wd, FRAME_H - 1, col);
		fprintf(f, "<text x=\"%.1f\" y=\"%u\">", x + 3, y + FRAME_H - 5);
		fit = wd > 6 ? (size_t)((wd - 6) / CHAR_W) : 0;
		if (fit >= 3) {
			size_t len = strlen(name);

			if (len <= fit) {
				xml_text(f, name, len);
			} else {
				xml_text(f, name, fit - 2);
				fputs("..", f);
			}
		}
		fputs("</text></g>\n", f);
	}
	fputs("</g>\n</svg>\n", f);
	rc = ferror(f) ? -1 : 0;
out:
	free(wt);
	free(order);
	free(t.n);
	return rc;
}
