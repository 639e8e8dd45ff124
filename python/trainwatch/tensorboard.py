"""TensorBoard's SummaryWriter for scalars, so a script switches with
`from trainwatch.tensorboard import SummaryWriter`.

Covered: add_scalar, add_scalars, flush, close (and `with`). Nothing is
written to log_dir. Histograms, images, text, graphs, embeddings, hparams,
audio, video, meshes and PR curves are not: those calls warn once and do
nothing (docs/python.md)."""

from ._run import Run, check_name
from ._unsupported import ignored

_WHAT = "trainwatch records scalars only"


class SummaryWriter:
    """A job's scalars. TensorBoard's arguments (log_dir, comment, purge_step,
    max_queue, flush_secs, filename_suffix) are accepted and not used.

    `prefix` is put before every tag: two writers whose tags are the same
    (runs/train and runs/val both writing "loss") would otherwise write one
    series; give them prefix="train/" and prefix="val/"."""

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10, flush_secs=120,
                 filename_suffix="", *, prefix="", job=None, endpoint=None):
        if not isinstance(prefix, str):
            raise TypeError("prefix must be a str, got %s" % type(prefix).__name__)
        self.log_dir = log_dir
        self.prefix = prefix
        self.run = Run(job, endpoint)

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None, new_style=False,
                   double_precision=False):
        """Records `tag` = `scalar_value` at `global_step`; `walltime` in seconds
        since the epoch (default now)."""
        check_name(tag, "tag")
        self.run.log_metrics({self.prefix + tag: scalar_value}, step=global_step,
                             _t_ms=_walltime_ms(walltime))

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        """Records each "main_tag/tag" = value of `tag_scalar_dict`, at one time."""
        check_name(main_tag, "main_tag")
        if not hasattr(tag_scalar_dict, "items"):
            raise TypeError("tag_scalar_dict must be a dict of tag -> number, got %s"
                            % type(tag_scalar_dict).__name__)
        self.run.log_metrics(
            {"%s%s/%s" % (self.prefix, main_tag, check_name(tag, "tag")): value
             for tag, value in tag_scalar_dict.items()},
            step=global_step, _t_ms=_walltime_ms(walltime))

    def flush(self):
        self.run.flush(self.run.exit_timeout)

    def close(self):
        self.run.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    add_histogram = ignored("SummaryWriter", "add_histogram", _WHAT)
    add_histogram_raw = ignored("SummaryWriter", "add_histogram_raw", _WHAT)
    add_image = ignored("SummaryWriter", "add_image", _WHAT)
    add_images = ignored("SummaryWriter", "add_images", _WHAT)
    add_image_with_boxes = ignored("SummaryWriter", "add_image_with_boxes", _WHAT)
    add_figure = ignored("SummaryWriter", "add_figure", _WHAT)
    add_text = ignored("SummaryWriter", "add_text", _WHAT)
    add_graph = ignored("SummaryWriter", "add_graph", _WHAT)
    add_embedding = ignored("SummaryWriter", "add_embedding", _WHAT)
    add_hparams = ignored("SummaryWriter", "add_hparams", _WHAT)
    add_pr_curve = ignored("SummaryWriter", "add_pr_curve", _WHAT)
    add_audio = ignored("SummaryWriter", "add_audio", _WHAT)
    add_video = ignored("SummaryWriter", "add_video", _WHAT)
    add_mesh = ignored("SummaryWriter", "add_mesh", _WHAT)
    add_custom_scalars = ignored("SummaryWriter", "add_custom_scalars", _WHAT)


def _walltime_ms(walltime):
    if walltime is None:
        return None
    if isinstance(walltime, bool) or not isinstance(walltime, (int, float)) or walltime < 0:
        raise TypeError("walltime must be seconds since the epoch (a number >= 0), got %r"
                        % (walltime,))
    return int(walltime * 1000)
