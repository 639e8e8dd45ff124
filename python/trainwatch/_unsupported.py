"""Calls of other trackers that trainwatch does not carry (parameters, tags,
artifacts, media): each warns once on stderr and does nothing, so a long job
is not stopped at its end by a call that only archives something."""

from . import _env


def ignored(module, name, what):
    def call(*args, **kwargs):
        _env.say_once(("unsupported", module, name),
                      "%s.%s is not supported (%s): ignored" % (module, name, what))

    call.__name__ = name
    call.__doc__ = "Not supported by trainwatch (%s): warns once on stderr, does nothing." % what
    return call
