/* data plugin: ImageFolder, torchvision's layout: root/<class>/.../<image>.
 * Classes are the subfolders of root sorted by name (byte order, as Python
 * sorts), class k gets label k; a class's files are walked recursively and
 * sorted like sorted(os.walk(...)): by folder path, then by file name. Files
 * are decoded when a sample is asked for, so errors name the file then. */
#include <dirent.h>
#include <errno.h>
#include <strings.h>
#include <sys/stat.h>

#include "data.h"

/* os.walk(followlinks=True) loops forever on a symlink cycle: a folder that
 * is its own ancestor is skipped, and no walk goes deeper than this. */
#define DT_MAX_DEPTH 32

typedef struct {
  char *dir, *name; /* dir is the full folder path; the file is dir/name */
  int64_t label;
} entry;

typedef struct {
  int channels;
  int64_t nclasses, n, cap, ndirs, dircap;
  char **classes, **dirs; /* dirs owns the folder paths the entries point to */
  entry *e;
} folder;

static bool is_image_name(const char *name) {
  const char *dot = strrchr(name, '.');
  return dot && (!strcasecmp(dot, ".png") || !strcasecmp(dot, ".jpg") || !strcasecmp(dot, ".jpeg"));
}
static bool is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode); /* follows symlinks, as os.scandir's is_dir() */
}
static char *join(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  char *p = wk_malloc(la + lb + 2);
  if (p) {
    memcpy(p, a, la);
    p[la] = '/';
    memcpy(p + la + 1, b, lb + 1);
  }
  return p;
}
static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}
static int cmp_entry(const void *a, const void *b) {
  const entry *x = a, *y = b;
  int c = strcmp(x->dir, y->dir);
  return c ? c : strcmp(x->name, y->name);
}

/* Names in `path` (malloc'd array of malloc'd strings, "." and ".." left out). */
static wk_status list_dir(const char *path, char ***names, int64_t *n) {
  *names = NULL;
  *n = 0;
  DIR *d = opendir(path);
  if (!d) return wk_error(WK_ERR_IO, "image_folder: cannot open folder '%s': %s", path, strerror(errno));
  int64_t cap = 0;
  wk_status st = WK_OK;
  for (struct dirent *de; st == WK_OK && (de = readdir(d));) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
    if (*n == cap) {
      char **nn = wk_realloc(*names, sizeof *nn * (size_t)(cap = cap ? cap * 2 : 16));
      if (!nn) {
        st = wk_error(WK_ERR_NO_MEMORY, "image_folder: out of memory listing '%s'", path);
        break;
      }
      *names = nn;
    }
    size_t len = strlen(de->d_name) + 1;
    if (!((*names)[*n] = wk_malloc(len)))
      st = wk_error(WK_ERR_NO_MEMORY, "image_folder: out of memory");
    else
      memcpy((*names)[(*n)++], de->d_name, len);
  }
  closedir(d);
  if (st != WK_OK) {
    for (int64_t i = 0; i < *n; i++) wk_free((*names)[i]);
    wk_free(*names);
    *names = NULL;
    *n = 0;
  }
  return st;
}
static void free_names(char **names, int64_t n) {
  for (int64_t i = 0; i < n; i++) wk_free(names[i]);
  wk_free(names);
}

typedef struct {
  dev_t dev;
  ino_t ino;
} dir_id;

/* Adds the image files under `dir` (recursively) with `label`; `dir` is
 * adopted. anc[0..depth) are the folders above it. */
static wk_status walk(folder *f, char *dir, int64_t label, dir_id *anc, int depth) {
  struct stat sb;
  bool cycle = stat(dir, &sb) != 0 || depth >= DT_MAX_DEPTH;
  for (int i = 0; !cycle && i < depth; i++) cycle = anc[i].dev == sb.st_dev && anc[i].ino == sb.st_ino;
  if (cycle) {
    wk_free(dir);
    return WK_OK;
  }
  anc[depth] = (dir_id){sb.st_dev, sb.st_ino};
  if (f->ndirs == f->dircap) {
    int64_t cap = f->dircap ? f->dircap * 2 : 16;
    char **nd = wk_realloc(f->dirs, sizeof *nd * (size_t)cap);
    if (!nd) {
      wk_free(dir);
      return wk_error(WK_ERR_NO_MEMORY, "image_folder: out of memory");
    }
    f->dirs = nd;
    f->dircap = cap;
  }
  f->dirs[f->ndirs++] = dir;
  char **names;
  int64_t n;
  wk_status st = list_dir(dir, &names, &n);
  if (st != WK_OK) return st;
  for (int64_t i = 0; i < n && st == WK_OK; i++) {
    char *full = join(dir, names[i]);
    if (!full) {
      st = wk_error(WK_ERR_NO_MEMORY, "image_folder: out of memory");
      break;
    }
    if (is_dir(full)) {
      st = walk(f, full, label, anc, depth + 1);
      continue;
    }
    wk_free(full);
    if (!is_image_name(names[i])) continue;
    if (f->n == f->cap) {
      entry *ne = wk_realloc(f->e, sizeof *ne * (size_t)(f->cap = f->cap ? f->cap * 2 : 64));
      if (!ne) {
        st = wk_error(WK_ERR_NO_MEMORY, "image_folder: out of memory");
        break;
      }
      f->e = ne;
    }
    f->e[f->n++] = (entry){dir, names[i], label};
    names[i] = NULL;
  }
  free_names(names, n);
  return st;
}

static void folder_free(void *p) {
  folder *f = p;
  for (int64_t i = 0; i < f->n; i++) wk_free(f->e[i].name);
  wk_free(f->e);
  free_names(f->dirs, f->ndirs);
  free_names(f->classes, f->nclasses);
  wk_free(f);
}
static int64_t folder_len(void *p) {
  return ((folder *)p)->n;
}
static wk_status folder_get(void *p, int64_t i, const wk_sample_ctx *ctx, wk_sample *out) {
  folder *f = p;
  (void)ctx;
  char *path = join(f->e[i].dir, f->e[i].name);
  if (!path) return wk_error(WK_ERR_NO_MEMORY, "image_folder: out of memory");
  uint8_t *b;
  size_t n;
  wk_status st = dt_read_file("image_folder", path, &b, &n);
  wk_tensor *x = st == WK_OK ? dt_image_decode_named(b, n, f->channels, "image_folder", path) : NULL;
  if (st == WK_OK) wk_free(b);
  wk_free(path);
  wk_tensor *y = x ? wk_scalar_tensor((double)f->e[i].label, WK_I64) : NULL;
  if (!y) {
    wk_release(x);
    return wk_last_error();
  }
  out->t[0] = x;
  out->t[1] = y;
  out->n = 2;
  return WK_OK;
}

wk_dataset *dt_image_folder(const char *root, int channels) {
  if (!root) {
    wk_error(WK_ERR_NULL, "image_folder: argument 'root' is NULL");
    return NULL;
  }
  if (channels != 0 && channels != 1 && channels != 3 && channels != 4) {
    wk_error(WK_ERR_INVALID_ARG, "image_folder: channels must be 0 (as stored), 1 (gray), 3 (RGB) or 4 (RGBA), got %d",
             channels);
    return NULL;
  }
  folder *f = wk_calloc(1, sizeof *f);
  if (!f) {
    wk_error(WK_ERR_NO_MEMORY, "image_folder: out of memory");
    return NULL;
  }
  f->channels = channels;
  char **names;
  int64_t n;
  wk_status st = list_dir(root, &names, &n);
  if (st != WK_OK) {
    wk_free(f);
    return NULL;
  }
  /* keep the subfolders only, sorted */
  int64_t k = 0;
  for (int64_t i = 0; i < n; i++) {
    char *full = join(root, names[i]);
    bool dir = full && is_dir(full);
    wk_free(full);
    if (dir)
      names[k++] = names[i];
    else
      wk_free(names[i]);
  }
  f->classes = names;
  f->nclasses = k;
  qsort(f->classes, (size_t)k, sizeof *f->classes, cmp_str);
  if (k == 0) st = wk_error(WK_ERR_IO, "image_folder: couldn't find any class folder in '%s'", root);
  for (int64_t c = 0; c < k && st == WK_OK; c++) {
    int64_t before = f->n;
    char *dir = join(root, f->classes[c]);
    dir_id anc[DT_MAX_DEPTH];
    st = dir ? walk(f, dir, c, anc, 0) : wk_error(WK_ERR_NO_MEMORY, "image_folder: out of memory");
    if (st == WK_OK && f->n == before)
      st = wk_error(WK_ERR_IO,
                    "image_folder: found no valid file for the class '%s' in '%s'. Supported extensions are: "
                    ".png, .jpg, .jpeg",
                    f->classes[c], root);
    if (st == WK_OK) qsort(f->e + before, (size_t)(f->n - before), sizeof *f->e, cmp_entry);
  }
  if (st != WK_OK) {
    folder_free(f);
    return NULL;
  }
  return dt_dataset_wrap(folder_len, folder_get, folder_free, f);
}

/* The name of class k of an ImageFolder, borrowed from it. */
const char *dt_image_folder_class(wk_dataset *ds, int64_t k) {
  if (!ds) {
    wk_error(WK_ERR_NULL, "image_folder_class: argument 'ds' is NULL");
    return NULL;
  }
  if (ds->impl.get != folder_get) {
    wk_error(WK_ERR_INVALID_ARG, "image_folder_class: the dataset is not an ImageFolder");
    return NULL;
  }
  folder *f = ds->self;
  if (k < 0 || k >= f->nclasses) {
    wk_error(WK_ERR_INDEX, "image_folder_class: class %lld is out of range (%lld classes)", (long long)k,
             (long long)f->nclasses);
    return NULL;
  }
  return f->classes[k];
}
