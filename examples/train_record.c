/* run.json, the main job's reproducibility record (see train_record.h). */
#include "train_record.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <wick/wick.h>

bool record_fnv1a_files(const char *const *paths, int n, uint64_t *hash) {
  uint64_t h = 0xcbf29ce484222325ull;
  static unsigned char buf[1 << 16];
  for (int i = 0; i < n; i++) {
    FILE *f = fopen(paths[i], "rb");
    if (!f) return false;
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0)
      for (size_t k = 0; k < got; k++) h = (h ^ buf[k]) * 0x100000001b3ull;
    bool bad = ferror(f);
    fclose(f);
    if (bad) return false;
  }
  *hash = h;
  return true;
}

/* A JSON string literal (quotes, escapes; NULL -> null). */
static void jstr(FILE *f, const char *s) {
  if (!s) {
    fputs("null", f);
    return;
  }
  fputc('"', f);
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\')
      fprintf(f, "\\%c", ch);
    else if (ch == '\n')
      fputs("\\n", f);
    else if (ch == '\t')
      fputs("\\t", f);
    else if (ch < 0x20)
      fprintf(f, "\\u%04x", ch);
    else
      fputc(ch, f);
  }
  fputc('"', f);
}

static const char *plugin_status_str(wk_plugin_status s) {
  return s == WK_PLUGIN_LOADED ? "loaded" : s == WK_PLUGIN_SKIPPED ? "skipped" : s == WK_PLUGIN_FAILED ? "failed" : "?";
}

bool record_write(const char *path, const train_config *c, const char *device_name, const train_data *d,
                  int start_epoch, int64_t nparams) {
  const char *const *dataset_files = d->files;
  int nfiles = d->nfiles;
  char tmp[1100];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  if (!f) return false;
  uint32_t abi = wk_abi_version();
  char host[256] = "", when[64] = "";
  gethostname(host, sizeof host - 1);
  time_t t = time(NULL);
  strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
  fprintf(f, "{\n  \"program\": \"examples/train\",\n  \"created\": \"%s\",\n  \"host\": ", when);
  jstr(f, host);
  fprintf(f, ",\n  \"wick\": {\"version\": ");
  jstr(f, wk_version());
  fprintf(f, ", \"header_version\": \"%s\", \"abi\": \"%u.%u\"},\n", WK_VERSION_STRING, abi >> 16, abi & 0xffff);
  fprintf(f, "  \"plugins\": [");
  for (int i = 0; i < wk_plugin_count(); i++) {
    wk_plugin *p = wk_plugin_at(i);
    if (!p) continue;
    fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
    jstr(f, wk_plugin_name(p));
    fputs(", \"version\": ", f);
    jstr(f, wk_plugin_version(p));
    fputs(", \"status\": ", f);
    jstr(f, plugin_status_str(wk_plugin_get_status(p)));
    fputs(", \"path\": ", f);
    jstr(f, wk_plugin_path(p));
    fputs("}", f);
  }
  fprintf(f, "\n  ],\n  \"device\": ");
  jstr(f, device_name);
  fprintf(f, ",\n  \"compiler\": ");
#if defined(__clang__)
  jstr(f, "clang " __VERSION__);
#elif defined(__GNUC__)
  jstr(f, "gcc " __VERSION__);
#elif defined(__VERSION__)
  jstr(f, __VERSION__);
#else
  jstr(f, "unknown");
#endif
  fprintf(f, ",\n  \"seed\": %llu,\n  \"hyperparameters\": {\"model\": ", (unsigned long long)c->seed);
  jstr(f, c->model);
  fprintf(f, ", \"parameters\": %lld, \"epochs\": %d, \"batch_size\": %lld, \"optimizer\": ", (long long)nparams,
          c->epochs, (long long)c->batch);
  jstr(f, c->optimizer);
  fprintf(f, ", \"lr\": %.10g, \"momentum\": %.10g, \"weight_decay\": %.10g, \"scheduler\": ", c->lr, c->momentum,
          c->weight_decay);
  jstr(f, c->scheduler);
  fprintf(f,
          ", \"loss\": \"cross_entropy\", \"workers\": %d, \"limit\": %lld, \"amp\": %s, \"amp_dtype\": %s, \"image\": [%lld, %lld, %lld], "
          "\"classes\": %lld, \"normalize\": {\"mean\": [",
          c->workers, (long long)c->limit, c->amp ? "true" : "false",
          c->amp ? (c->amp_f16 ? "\"float16\"" : "\"bfloat16\"") : "null", (long long)d->channels, (long long)d->height,
          (long long)d->width, (long long)d->classes);
  for (int i = 0; i < d->nstats; i++) fprintf(f, "%s%.6g", i ? ", " : "", d->mean[i]);
  fputs("], \"std\": [", f);
  for (int i = 0; i < d->nstats; i++) fprintf(f, "%s%.6g", i ? ", " : "", d->std[i]);
  fprintf(f, "]}, \"grey_to_rgb\": %s},\n", d->rgb_from_grey ? "true" : "false");
  fprintf(f, "  \"start_epoch\": %d,\n  \"resumed_from\": ", start_epoch);
  jstr(f, c->resume);
  fprintf(f, ",\n  \"dataset\": {\"name\": ");
  jstr(f, c->dataset);
  fputs(", \"dir\": ", f);
  jstr(f, c->data ? c->data : (!strcmp(c->dataset, "fashion-mnist") ? TRAIN_FMNIST_DIR : NULL));
  fputs(", \"files\": [", f);
  for (int i = 0; i < nfiles; i++) {
    fputs(i ? ", " : "", f);
    jstr(f, dataset_files[i]);
  }
  uint64_t h;
  if (record_fnv1a_files(dataset_files, nfiles, &h))
    fprintf(f, "], \"fnv1a64\": \"%016llx\"}\n}\n", (unsigned long long)h);
  else
    fputs("], \"fnv1a64\": null}\n}\n", f);
  bool ok = !ferror(f);
  ok = fclose(f) == 0 && ok;
  if (ok)
    ok = rename(tmp, path) == 0;
  else
    remove(tmp);
  return ok;
}
