"""tokenmix_torch: tokenmix's model contract (docs/model.md) in PyTorch,
every mixer kind and option, and tokenmix run directories both ways.

    import tokenmix_torch
    model = tokenmix_torch.load_run("run")            # newest complete checkpoint
    logits = model(tokens)                            # [B, T] -> [B, T, V] or [B, C]
    tokenmix_torch.save_run(model, "run", step=1000, optimizer=opt)

See docs/pytorch.md.
"""
from .config import check as check_config
from .model import MIXERS, Model
from .run import load_optimizer, load_run, save_run
from .rng import pass_seed
from .st import load as load_safetensors
from .st import save as save_safetensors
from .train import optimizer, schedule, step, train_steps

__all__ = ["Model", "MIXERS", "check_config", "load_run", "save_run", "load_optimizer", "pass_seed",
           "load_safetensors", "save_safetensors", "optimizer", "schedule", "step", "train_steps"]
