"""BatchNorms traced as built, in training mode: torch's batch-size check in
``F.batch_norm`` raises a TracerWarning located at a line with no branch (the
``Sequential``'s ``forward``, or the line calling the module)."""
import torch

#: left in training mode (a freshly built module is)
net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4))
#: the same, put in eval mode before tracing: nothing to warn about
net_eval = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4)).eval()


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)
        self.bn = torch.nn.BatchNorm2d(4)
        self.head = torch.nn.Sequential(torch.nn.Conv2d(4, 4, 1), torch.nn.BatchNorm2d(4))

    def forward(self, x):
        return self.head(self.bn(self.conv(x)))


example_inputs = {name: (lambda: (torch.rand(2, 3, 8, 8),)) for name in ("net", "net_eval", "Net")}
