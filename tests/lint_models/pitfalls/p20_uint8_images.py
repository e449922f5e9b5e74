"""Integer images are scaled to [0, 1]; traced with a float image."""
import torch


class ToUnit(torch.nn.Module):
    def forward(self, img):
        if not img.is_floating_point():  # expect: error
            img = img.float() / 255
        return img.mean((-1, -2))


example_inputs = {"ToUnit": lambda: (torch.rand(2, 3, 4, 4),)}
