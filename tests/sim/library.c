/* SPDX-License-Identifier: MIT */
/* library.c - images and what is made of them: PTX parsed for its kernels (.entry),
 * its globals (.global) and the instruction that does not assemble (cusim_bad),
 * the JIT logs, modules with their functions and globals, and cuLibrary with
 * its kernels and its module in each context.
 *
 * PTX that does not assemble, by convention (so that ptxas rejects the same
 * text): a line, after the first .entry, whose first word is the identifier
 * cusim_bad, used as an instruction ("\tcusim_bad;"). Each such line is an
 * error in the JIT error log, worded and laid out as the H200's driver writes
 * it (cudasim.h). A module load of it answers 218; a library load answers 0
 * and only its later calls answer 218 (measured). */
#include "sim.h"

static bool is_ident_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       ch == '_' || ch == '$';
}

static bool is_space(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f' || ch == '\v';
}

/* PTX is plain ASCII text; anything else (a cubin, a fatbin, garbage) is an image we cannot load. */
static bool is_text(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch >= 0x7f || (ch < 0x20 && !is_space((char)ch)))
			return false;
	}
	return true;
}

static char *xstrndup(const char *s, size_t n)
{
	char *d = strndup(s, n);
	if (!d) {
		fputs("cudasim: out of memory\n", stderr);
		abort();
	}
	return d;
}

/* --- images -------------------------------------------------------------------- */

struct gspec {
	char *name;
	size_t size;
};

struct image {
	CUresult rc;            /* what loading it answers: 0, 200 (not PTX), 218 (PTX that does not assemble) */
	char *log;              /* the JIT error log it makes: "" or ptxas's lines */
	char **entries;         /* kernel names, in the order of the text */
	size_t nentries;
	struct gspec *globals;
	size_t nglobals;
};

void image_free(struct image *img)
{
	if (!img)
		return;
	for (size_t i = 0; i < img->nentries; i++)
		free(img->entries[i]);
	for (size_t i = 0; i < img->nglobals; i++)
		free(img->globals[i].name);
	free(img->entries);
	free(img->globals);
	free(img->log);
	free(img);
}

/* The text with its comments blanked out, newlines kept (so lines still count). */
static char *uncommented(const char *text, size_t n)
{
	char *t = xstrndup(text, n);
	for (size_t i = 0; i < n; i++) {
		if (t[i] == '/' && i + 1 < n && t[i + 1] == '/') {
			for (; i < n && t[i] != '\n'; i++)
				t[i] = ' ';
		} else if (t[i] == '/' && i + 1 < n && t[i + 1] == '*') {
			size_t j = i + 2;
			t[i] = t[i + 1] = ' ';
			for (; j < n && !(t[j] == '*' && j + 1 < n && t[j + 1] == '/'); j++)
				if (t[j] != '\n')
					t[j] = ' ';
			if (j < n)
				t[j] = ' ';
			if (j + 1 < n)
				t[j + 1] = ' ';
			i = j + 1;
		}
	}
	return t;
}

static void add_entry(struct image *img, const char *name, size_t len)
{
	img->entries = xrealloc(img->entries, (img->nentries + 1) * sizeof *img->entries);
	img->entries[img->nentries++] = xstrndup(name, len);
}

/* The names after each ".entry"; where the first is, or NULL. */
static const char *parse_entries(struct image *img, const char *t)
{
	static const char key[] = ".entry";
	const size_t klen = sizeof key - 1;
	const char *first = NULL;
	for (const char *p = t; (p = strstr(p, key)) != NULL; p += klen) {
		if ((p > t && !is_space(p[-1])) || !is_space(p[klen]))
			continue;
		const char *q = p + klen;
		while (is_space(*q))
			q++;
		const char *e = q;
		while (is_ident_char(*e))
			e++;
		if (e == q)
			continue;
		if (!first)
			first = p;
		add_entry(img, q, (size_t)(e - q));
	}
	return first;
}

/* One token of PTX at *p: a directive or identifier (with its dot), a number, or one punctuation character. */
static size_t token(const char **p, const char **start)
{
	const char *s = *p;
	while (is_space(*s))
		s++;
	*start = s;
	if (!*s)
		return 0;
	const char *e = s;
	if (*e == '.' || is_ident_char(*e)) {
		e++;
		while (is_ident_char(*e))
			e++;
	} else {
		e++;
	}
	*p = e;
	return (size_t)(e - s);
}

static bool tok_is(const char *t, size_t n, const char *word)
{
	return strlen(word) == n && strncmp(t, word, n) == 0;
}

/* Bytes of a PTX scalar type (".u32"), 0 for any other token. */
static size_t type_size(const char *t, size_t n)
{
	static const struct { const char *name; size_t size; } types[] = {
		{ ".b8", 1 }, { ".u8", 1 }, { ".s8", 1 },
		{ ".b16", 2 }, { ".u16", 2 }, { ".s16", 2 }, { ".f16", 2 }, { ".bf16", 2 },
		{ ".b32", 4 }, { ".u32", 4 }, { ".s32", 4 }, { ".f32", 4 },
		{ ".b64", 8 }, { ".u64", 8 }, { ".s64", 8 }, { ".f64", 8 },
	};
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
		if (tok_is(t, n, types[i].name))
			return types[i].size;
	return 0;
}

/* The declarations ".global [.align A] [.v2|.v4] .TYPE NAME[N]...;" outside every body, .extern
 * ones left out (they take no storage). A declaration this does not understand is skipped. */
static void parse_globals(struct image *img, const char *t)
{
	const char *p = t, *s;
	size_t n;
	int depth = 0;
	bool is_extern = false;
	while ((n = token(&p, &s)) != 0) {
		if (*s == '{' || *s == '}' || *s == ';') {
			depth += *s == '{' ? 1 : *s == '}' ? -1 : 0;
			is_extern = false;
			continue;
		}
		if (depth)
			continue;
		if (tok_is(s, n, ".extern"))
			is_extern = true;
		if (!tok_is(s, n, ".global") || is_extern)
			continue;
		size_t size = 0, count = 1;
		n = token(&p, &s);
		if (tok_is(s, n, ".align")) {
			token(&p, &s);
			n = token(&p, &s);
		}
		if (tok_is(s, n, ".v2") || tok_is(s, n, ".v4")) {
			count = (size_t)(s[2] - '0');
			n = token(&p, &s);
		}
		size = type_size(s, n);
		const char *name;
		size_t nlen = token(&p, &name);
		if (!size || !nlen || !is_ident_char(*name) || (*name >= '0' && *name <= '9'))
			continue;
		bool ok = true;
		const char *q = p;
		while ((n = token(&q, &s)) != 0 && *s == '[') {
			char *end;
			unsigned long long dim = strtoull(q, &end, 10);
			if (end == q || dim == 0 || dim > SIM_MAX_ALLOC) {
				ok = false;
				break;
			}
			count *= (size_t)dim;
			q = end;
			if (token(&q, &s) != 1 || *s != ']' || count > SIM_MAX_ALLOC) {
				ok = false;
				break;
			}
			p = q;
		}
		if (!ok || size * count > SIM_MAX_ALLOC)
			continue;
		img->globals = xrealloc(img->globals, (img->nglobals + 1) * sizeof *img->globals);
		img->globals[img->nglobals].name = xstrndup(name, nlen);
		img->globals[img->nglobals++].size = size * count;
	}
}

/* Appends to a growing string. */
static void append(char **buf, size_t *len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void append(char **buf, size_t *len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	*buf = xrealloc(*buf, *len + (size_t)k + 1);
	va_start(ap, fmt);
	vsnprintf(*buf + *len, (size_t)k + 1, fmt, ap);
	va_end(ap);
	*len += (size_t)k;
}

/* The lines after the first .entry whose first word is cusim_bad, as ptxas's log of them; NULL if none. */
static char *bad_lines(const char *t, const char *first_entry)
{
	static const char bad[] = "cusim_bad";
	char *log = NULL;
	size_t len = 0;
	unsigned line = 1;
	for (const char *p = t; *p; line++) {
		const char *q = p;
		while (*q == ' ' || *q == '\t')
			q++;
		if (p >= first_entry && strncmp(q, bad, sizeof bad - 1) == 0 && !is_ident_char(q[sizeof bad - 1]) &&
		    q[sizeof bad - 1] != ':')
			append(&log, &len, "%sptxas application ptx input, line %u; error   : "
				     "Not a name of any known instruction: '%s'", log ? "\n" : "", line, bad);
		const char *nl = strchr(p, '\n');
		if (!nl)
			break;
		p = nl + 1;
	}
	if (log)
		append(&log, &len, "\nptxas fatal   : Ptx assembly aborted due to errors");
	return log;
}

/* What an image of n bytes is: never NULL. Text with a .entry or a .global is
 * PTX; with a cusim_bad line it does not assemble. */
static struct image *image_parse(const char *text, size_t n)
{
	struct image *img = xrealloc(NULL, sizeof *img);
	memset(img, 0, sizeof *img);
	if (!is_text(text, n)) {
		img->rc = CUDA_ERROR_INVALID_IMAGE;
		img->log = xstrndup("", 0);
		return img;
	}
	char *t = uncommented(text, n);
	const char *first = parse_entries(img, t);
	parse_globals(img, t);
	img->log = first ? bad_lines(t, first) : NULL;
	free(t);
	if (img->log) {
		img->rc = CUDA_ERROR_INVALID_PTX;
	} else {
		img->log = xstrndup("", 0);
		if (!img->nentries && !img->nglobals)
			img->rc = CUDA_ERROR_INVALID_IMAGE;
	}
	return img;
}

/* --- the JIT logs ---------------------------------------------------------------- */

/* The log buffers a load's options name: the option's index, -1 where not given. */
struct jit_logs {
	int err_buf, err_size, info_buf, info_size;
};

/* Other options are taken and ignored; a log size without its buffer is 1 (measured with a size of 0). */
static CUresult jit_parse(unsigned int n, const CUjit_option *opts, struct jit_logs *j)
{
	*j = (struct jit_logs){ -1, -1, -1, -1 };
	for (unsigned int i = 0; i < n && i < 0x7fffffffu; i++) {
		switch (opts[i]) {
		case CU_JIT_ERROR_LOG_BUFFER:
			j->err_buf = (int)i;
			break;
		case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES:
			j->err_size = (int)i;
			break;
		case CU_JIT_INFO_LOG_BUFFER:
			j->info_buf = (int)i;
			break;
		case CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES:
			j->info_size = (int)i;
			break;
		default:
			break;
		}
	}
	if ((j->err_size >= 0 && j->err_buf < 0) || (j->info_size >= 0 && j->info_buf < 0))
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

/* As the H200's driver does: the first size-1 bytes of text and a NUL, and the
 * size option set to the bytes used, min(strlen(text), size). */
static void log_write(void **vals, int buf, int size, const char *text)
{
	if (buf < 0 || size < 0)
		return;
	char *b = vals[buf];
	size_t cap = (unsigned int)(uintptr_t)vals[size], len = strlen(text);
	if (!b || !cap)
		return;
	size_t k = len < cap - 1 ? len : cap - 1;
	memcpy(b, text, k);
	b[k] = '\0';
	vals[size] = (void *)(uintptr_t)(len < cap ? len : cap);
}

static void jit_write(const struct jit_logs *j, void **vals, const char *errlog)
{
	log_write(vals, j->err_buf, j->err_size, errlog);
	log_write(vals, j->info_buf, j->info_size, "");
}

/* --- modules ----------------------------------------------------------------------- */

/* A module of cur with img's functions and globals (each global its own device allocation, zeroed,
 * hidden from cusim_live); NULL when a global's memory cannot be had. */
static struct obj *module_make(struct obj *cur, const struct image *img)
{
	struct obj *mod = obj_new(K_MODULE, cur, 0);
	for (size_t i = 0; i < img->nentries; i++) {
		struct obj *f = obj_new(K_FUNC, mod, 0);
		f->name = xstrndup(img->entries[i], strlen(img->entries[i]));
	}
	for (size_t i = 0; i < img->nglobals; i++) {
		struct obj *g = obj_new(K_MEM, mod, img->globals[i].size);
		if (!g) {
			obj_kill(mod, "its load failed");
			return NULL;
		}
		obj_hide(g);
		g->global = true;
		g->name = xstrndup(img->globals[i].name, strlen(img->globals[i].name));
	}
	return mod;
}

CUresult module_load_text(struct call *c, struct obj *cur, const char *text, size_t n, CUmodule *pmod,
			  unsigned int nopts, const CUjit_option *opts, void **vals)
{
	struct jit_logs j;
	CUresult rc = jit_parse(nopts, opts, &j);
	if (rc)
		return rc;
	struct image *img = image_parse(text, n);
	jit_write(&j, vals, img->log);
	rc = img->rc;
	if (rc == CUDA_SUCCESS) {
		struct obj *mod = module_make(cur, img);
		if (mod) {
			*pmod = (CUmodule)(uintptr_t)mod->value;
			c->handle = mod->value;
		} else {
			rc = CUDA_ERROR_OUT_OF_MEMORY;
		}
	}
	image_free(img);
	return rc;
}

CUresult read_file(const char *path, char **out, size_t *n)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return CUDA_ERROR_FILE_NOT_FOUND;
	char *buf = NULL;
	size_t len = 0, cap = 0;
	for (;;) {
		if (len + 4096 + 1 > cap) {
			cap = cap ? 2 * cap : 8192;
			buf = xrealloc(buf, cap);
		}
		size_t got = fread(buf + len, 1, cap - len - 1, f);
		len += got;
		if (got == 0 || len > SIM_MAX_IMAGE)
			break;
	}
	bool failed = ferror(f) || len > SIM_MAX_IMAGE;
	fclose(f);
	if (failed) {
		free(buf);
		return CUDA_ERROR_INVALID_IMAGE;
	}
	buf[len] = '\0';
	*out = buf;
	*n = len;
	return CUDA_SUCCESS;
}

/* A global of a live module by name: CUDA_SUCCESS, 500 for no such name, 1 for the name of a function (measured). */
static CUresult global_of(struct obj *mod, const char *name, CUdeviceptr *dptr, size_t *bytes)
{
	CUresult rc = CUDA_ERROR_NOT_FOUND;
	for (struct obj *k = mod->kid_first; k; k = k->sib_next) {
		if (strcmp(k->name, name) != 0)
			continue;
		if (k->kind == K_MEM) {
			if (dptr)
				*dptr = k->value;
			if (bytes)
				*bytes = k->size;
			return CUDA_SUCCESS;
		}
		rc = CUDA_ERROR_INVALID_VALUE;
	}
	if (dptr)
		*dptr = 0;
	if (bytes)
		*bytes = 0;
	return rc;
}

CUresult sim_cuModuleGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUmodule mod, const char *name)
{
	struct call c;
	if (enter(&c, F_cuModuleGetGlobal, H(mod)))
		return leave(&c, c.rc);
	if ((!dptr && !bytes) || !name)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	struct obj *m;
	CUresult rc = need_live(&c, K_MODULE, H(mod), &m);
	if (rc)
		return leave(&c, rc);
	rc = global_of(m, name, dptr, bytes);
	if (rc == CUDA_SUCCESS && dptr)
		c.a.handle2 = *dptr;
	return leave(&c, rc);
}

/* --- libraries ----------------------------------------------------------------------- */

void library_obj_dies(struct obj *o)
{
	if (o->kind == K_LIBRARY) {
		while (o->link_first)
			obj_kill(o->link_first, "its library was unloaded");
		image_free(o->img);
		o->img = NULL;
	} else if (o->kind == K_MODULE && o->lib) {
		if (o->link_prev)
			o->link_prev->link_next = o->link_next;
		else
			o->lib->link_first = o->link_next;
		if (o->link_next)
			o->link_next->link_prev = o->link_prev;
		o->link_prev = o->link_next = NULL;
		o->lib = NULL;
	}
}

/* The library's module in context cur, made at its first use there (as the real driver loads a library
 * into a context lazily): not counted as a module, dies with the context or the library. NULL: no memory. */
static struct obj *library_module(struct obj *lib, struct obj *cur)
{
	for (struct obj *m = lib->link_first; m; m = m->link_next)
		if (m->owner == cur)
			return m;
	struct obj *m = module_make(cur, lib->img);
	if (!m)
		return NULL;
	obj_hide(m);
	m->lib = lib;
	m->link_prev = NULL;
	m->link_next = lib->link_first;
	if (lib->link_first)
		lib->link_first->link_prev = m;
	lib->link_first = m;
	return m;
}

/* A library from image text: context-free. Its image's error, if any, is answered by its later calls. */
static CUresult library_load(struct call *c, CUlibrary *plib, const char *text, size_t n, CUjit_option *jopts,
			     void **jvals, unsigned int njopts)
{
	struct jit_logs j;
	CUresult rc = jit_parse(njopts, jopts, &j);
	if (rc)
		return rc;
	struct image *img = image_parse(text, n);
	jit_write(&j, jvals, img->log);
	struct obj *lib = obj_new(K_LIBRARY, NULL, 0);
	lib->img = img;
	if (img->rc == CUDA_SUCCESS) {
		for (size_t i = 0; i < img->nentries; i++) {
			struct obj *k = obj_new(K_KERNEL, lib, 0);
			k->name = xstrndup(img->entries[i], strlen(img->entries[i]));
		}
	}
	*plib = (CUlibrary)(uintptr_t)lib->value;
	c->handle = lib->value;
	return CUDA_SUCCESS;
}

static bool bad_options(const CUjit_option *jopts, void **jvals, unsigned int njopts, const CUlibraryOption *lopts,
			void **lvals, unsigned int nlopts)
{
	return (njopts && (!jopts || !jvals)) || (nlopts && (!lopts || !lvals));
}

CUresult sim_cuLibraryLoadData(CUlibrary *plib, const void *code, CUjit_option *jopts, void **jvals,
			       unsigned int njopts, CUlibraryOption *lopts, void **lvals, unsigned int nlopts)
{
	struct call c;
	if (enter_with(&c, F_cuLibraryLoadData, 0, ARGS(.arg = njopts, .flags = nlopts)))
		return leave(&c, c.rc);
	if (!plib || !code || bad_options(jopts, jvals, njopts, lopts, lvals, nlopts))
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	const char *text = code;
	return leave(&c, library_load(&c, plib, text, strnlen(text, SIM_MAX_IMAGE), jopts, jvals, njopts));
}

CUresult sim_cuLibraryLoadFromFile(CUlibrary *plib, const char *fname, CUjit_option *jopts, void **jvals,
				   unsigned int njopts, CUlibraryOption *lopts, void **lvals, unsigned int nlopts)
{
	struct call c;
	if (enter_with(&c, F_cuLibraryLoadFromFile, 0, ARGS(.arg = njopts, .flags = nlopts)))
		return leave(&c, c.rc);
	if (!plib || !fname || bad_options(jopts, jvals, njopts, lopts, lvals, nlopts))
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	char *text;
	size_t n;
	CUresult rc = read_file(fname, &text, &n);
	if (rc)
		return leave(&c, rc);
	rc = library_load(&c, plib, text, n, jopts, jvals, njopts);
	free(text);
	return leave(&c, rc);
}

/* A second unload crashed the real driver (double free): a misuse here. */
CUresult sim_cuLibraryUnload(CUlibrary lib)
{
	struct call c;
	if (enter(&c, F_cuLibraryUnload, H(lib)))
		return leave(&c, c.rc);
	if (!lib)
		return leave(&c, CUDA_ERROR_INVALID_HANDLE);
	struct obj *o;
	CUresult rc = need_live(&c, K_LIBRARY, H(lib), &o);
	if (rc == CUDA_SUCCESS)
		rc = capture_unsafe();
	if (rc)
		return leave(&c, rc);
	obj_kill(o, "already unloaded");
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuLibraryGetKernel(CUkernel *pk, CUlibrary lib, const char *name)
{
	struct call c;
	if (enter(&c, F_cuLibraryGetKernel, H(lib)))
		return leave(&c, c.rc);
	if (!pk || !name)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	struct obj *o;
	CUresult rc = need_live(&c, K_LIBRARY, H(lib), &o);
	if (rc == CUDA_SUCCESS)
		rc = o->img->rc;
	if (rc)
		return leave(&c, rc);
	for (struct obj *k = o->kid_first; k; k = k->sib_next) {
		if (strcmp(k->name, name) == 0) {
			*pk = (CUkernel)(uintptr_t)k->value;
			c.a.handle2 = k->value;
			return leave(&c, CUDA_SUCCESS);
		}
	}
	return leave(&c, CUDA_ERROR_NOT_FOUND);
}

/* Measured 0 kernels (and CUDA_SUCCESS) for a library whose image failed. */
CUresult sim_cuLibraryGetKernelCount(unsigned int *count, CUlibrary lib)
{
	struct call c;
	if (enter(&c, F_cuLibraryGetKernelCount, H(lib)))
		return leave(&c, c.rc);
	if (!count)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	struct obj *o;
	CUresult rc = need_live(&c, K_LIBRARY, H(lib), &o);
	if (rc)
		return leave(&c, rc);
	unsigned int n = 0;
	for (struct obj *k = o->kid_first; k; k = k->sib_next)
		n++;
	*count = n;
	c.a.arg = n;
	return leave(&c, CUDA_SUCCESS);
}

/* The library of a call, live, with a good image, and its module in the current context. */
static CUresult library_here(struct call *c, uint64_t lib, struct obj **mod)
{
	struct obj *o, *cur;
	CUresult rc = need_live(c, K_LIBRARY, lib, &o);
	if (rc == CUDA_SUCCESS)
		rc = o->img->rc;
	if (rc == CUDA_SUCCESS)
		rc = need_current(&cur);
	if (rc)
		return rc;
	*mod = library_module(o, ctx_home(cur));
	return *mod ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult sim_cuLibraryGetModule(CUmodule *pmod, CUlibrary lib)
{
	struct call c;
	if (enter(&c, F_cuLibraryGetModule, H(lib)))
		return leave(&c, c.rc);
	if (!pmod)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	struct obj *m;
	CUresult rc = library_here(&c, H(lib), &m);
	if (rc)
		return leave(&c, rc);
	*pmod = (CUmodule)(uintptr_t)m->value;
	c.a.handle2 = m->value;
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary lib, const char *name)
{
	struct call c;
	if (enter(&c, F_cuLibraryGetGlobal, H(lib)))
		return leave(&c, c.rc);
	if ((!dptr && !bytes) || !name)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	struct obj *m;
	CUresult rc = library_here(&c, H(lib), &m);
	if (rc == CUDA_SUCCESS)
		rc = global_of(m, name, dptr, bytes);
	if (rc == CUDA_SUCCESS && dptr)
		c.a.handle2 = *dptr;
	return leave(&c, rc);
}

/* The kernel's function in the current context: the same one every time there (measured). */
CUresult sim_cuKernelGetFunction(CUfunction *pf, CUkernel k)
{
	struct call c;
	if (enter(&c, F_cuKernelGetFunction, H(k)))
		return leave(&c, c.rc);
	if (!pf)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	struct obj *ko, *m;
	CUresult rc = need_live(&c, K_KERNEL, H(k), &ko);
	if (rc == CUDA_SUCCESS)
		rc = library_here(&c, ko->owner->value, &m);
	if (rc)
		return leave(&c, rc);
	for (struct obj *f = m->kid_first; f; f = f->sib_next) {
		if (f->kind == K_FUNC && strcmp(f->name, ko->name) == 0) {
			*pf = (CUfunction)(uintptr_t)f->value;
			c.a.handle2 = f->value;
			return leave(&c, CUDA_SUCCESS);
		}
	}
	return leave(&c, CUDA_ERROR_NOT_FOUND);
}

/* The name stays valid until the library is unloaded. */
CUresult sim_cuKernelGetName(const char **name, CUkernel k)
{
	struct call c;
	if (enter(&c, F_cuKernelGetName, H(k)))
		return leave(&c, c.rc);
	if (!name)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	struct obj *ko;
	CUresult rc = need_live(&c, K_KERNEL, H(k), &ko);
	if (rc)
		return leave(&c, rc);
	*name = ko->name;
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuKernelGetLibrary(CUlibrary *plib, CUkernel k)
{
	struct call c;
	if (enter(&c, F_cuKernelGetLibrary, H(k)))
		return leave(&c, c.rc);
	if (!plib)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	struct obj *ko;
	CUresult rc = need_live(&c, K_KERNEL, H(k), &ko);
	if (rc)
		return leave(&c, rc);
	*plib = (CUlibrary)(uintptr_t)ko->owner->value;
	c.a.handle2 = ko->owner->value;
	return leave(&c, CUDA_SUCCESS);
}
